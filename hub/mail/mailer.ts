import { invalid } from '../../engine/errors.js';

// The hub's only e-mail: invitations and sign-in links, sent through the SMTP server the
// deployment names (SVC_HUB_SMTP_URL, SVC_HUB_MAIL_FROM) with nodemailer. Every value that
// reaches a header is checked or flattened here: a person's name or address holding CR/LF (or
// any control character) never adds a header.

export interface MailSettings {
  /** smtp://user:pass@host:587 (STARTTLS when offered) or smtps://user:pass@host:465. */
  smtpUrl: string;
  /** The sender: an address, or "Name <address>". */
  from: string;
}

export interface Message {
  to: { address: string; name?: string };
  subject: string;
  text: string;
}

/** An address fit for a header: one mailbox, no spaces, control characters, brackets or commas. */
const ADDRESS = /^[^\s<>(),;:"\\\x00-\x1f\x7f@]+@[^\s<>(),;:"\\\x00-\x1f\x7f@]+\.[^\s<>(),;:"\\\x00-\x1f\x7f@]+$/;

/** Header text on one line: control characters (CR, LF, tab, NUL...) become spaces. */
export const oneLine = (s: string): string =>
  s
    .replace(/[\x00-\x1f\x7f\u2028\u2029]+/g, ' ')
    .trim()
    .slice(0, 200);

export function checkAddress(address: string, what = 'e-mail address'): string {
  if (address.length > 254 || !ADDRESS.test(address))
    throw invalid(`${what} "${oneLine(address)}" is not a plain address such as bob@example.com`);
  return address;
}

/** The settings from the environment, checked: both or neither. */
export function mailSettings(env: NodeJS.ProcessEnv, given?: MailSettings): MailSettings | undefined {
  const smtpUrl = given?.smtpUrl ?? (env.SVC_HUB_SMTP_URL || undefined);
  const from = given?.from ?? (env.SVC_HUB_MAIL_FROM || undefined);
  if (!smtpUrl && !from) return undefined;
  if (!smtpUrl) throw invalid('SVC_HUB_MAIL_FROM is set but SVC_HUB_SMTP_URL is not: set both to send e-mail, or neither');
  if (!from) throw invalid('SVC_HUB_SMTP_URL is set but SVC_HUB_MAIL_FROM is not: set the sender address (e.g. svc hub <hub@example.com>)');
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    throw invalid('SVC_HUB_SMTP_URL must be a URL such as smtp://user:pass@host:587 or smtps://user:pass@host:465');
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw invalid(`SVC_HUB_SMTP_URL must start with smtp:// or smtps:// (got ${url.protocol}//)`);
  if (!url.hostname) throw invalid('SVC_HUB_SMTP_URL names no host');
  const m = /^(?:(.*)<([^<>]+)>|([^<>]+))$/.exec(from.trim());
  checkAddress((m?.[2] ?? m?.[3] ?? '').trim(), 'SVC_HUB_MAIL_FROM');
  if (/[\x00-\x1f\x7f]/.test(from)) throw invalid('SVC_HUB_MAIL_FROM holds a control character');
  return { smtpUrl, from: from.trim() };
}

/** Where sending failed, in one line (the SMTP server's answer or the connection's error). */
export class MailFailed extends Error {
  override name = 'MailFailed';
}

export class Mailer {
  private transport: Promise<import('nodemailer').Transporter> | undefined;
  constructor(private readonly settings: MailSettings) {}

  private open() {
    this.transport ??= import('nodemailer').then((m) =>
      m.default.createTransport({
        url: this.settings.smtpUrl,
        disableFileAccess: true,
        disableUrlAccess: true,
        // A request waits on the send (inside its transaction): a server that stalls fails it in seconds, not minutes.
        connectionTimeout: 10_000,
        greetingTimeout: 10_000,
        socketTimeout: 20_000,
      }),
    );
    return this.transport;
  }

  async send(m: Message): Promise<void> {
    const address = checkAddress(m.to.address);
    const name = m.to.name ? oneLine(m.to.name) : '';
    try {
      await (
        await this.open()
      ).sendMail({
        from: this.settings.from,
        to: name ? { name, address } : address,
        subject: oneLine(m.subject),
        text: m.text,
        // Links and tokens only: no attachments, no HTML, no tracking.
        disableFileAccess: true,
        disableUrlAccess: true,
      });
    } catch (err) {
      throw new MailFailed(`the e-mail to ${address} could not be sent: ${oneLine((err as Error).message)}`);
    }
  }

  close(): void {
    void this.transport?.then((t) => t.close());
  }
}

/** One message on its own connection (the hub sends few: no pool to keep open). */
export async function sendMail(settings: MailSettings, m: Message): Promise<void> {
  const mailer = new Mailer(settings);
  try {
    await mailer.send(m);
  } finally {
    mailer.close();
  }
}

export function invitationMessage(o: { org: string; name: string; address: string; url: string; by: string; expiresAt: string }): Message {
  return {
    to: { address: o.address, name: o.name },
    subject: `You are invited to ${o.org} on svc hub`,
    text: [
      `${o.by} invited you (${o.name}) to the team memory of ${o.org}.`,
      '',
      'Open this link to accept, sign in and get your first API key:',
      o.url,
      '',
      `It works once, until ${o.expiresAt}. If you did not expect it, ignore this message.`,
    ].join('\n'),
  };
}

export function signInLinkMessage(o: { org: string; name: string; address: string; url: string; minutes: number }): Message {
  return {
    to: { address: o.address, name: o.name },
    subject: `Your sign-in link to ${o.org} on svc hub`,
    text: [
      `A sign-in link for ${o.name} at ${o.org}:`,
      o.url,
      '',
      `It works once, for ${o.minutes} minutes. If you did not ask for it, ignore this message.`,
    ].join('\n'),
  };
}
