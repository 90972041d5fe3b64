import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import { loadConfig } from '../config.js';
import { sendMail } from '../mail/mailer.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// E-mail through a real SMTP server on loopback (smtp-server): invitations and sign-in links
// arrive, their links work once, and no header comes from a person's name or address.

interface Received {
  raw: string;
  rcpt: string[];
  from: string;
}

async function startSmtp(): Promise<{ url: string; inbox: Received[]; next(): Promise<Received>; close(): Promise<void> }> {
  const inbox: Received[] = [];
  const waiting: Array<(m: Received) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, done) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const m = {
          raw: Buffer.concat(chunks).toString('utf8'),
          rcpt: session.envelope.rcptTo.map((r) => r.address),
          from: (session.envelope.mailFrom || { address: '' }).address,
        };
        const w = waiting.shift();
        if (w) w(m);
        else inbox.push(m);
        done();
      });
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    inbox,
    next: () => (inbox.length ? Promise.resolve(inbox.shift()!) : new Promise((r) => waiting.push(r))),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const headerBlock = (raw: string): string => raw.slice(0, raw.indexOf('\r\n\r\n'));
const linkIn = async (raw: string): Promise<string> => {
  const text = (await simpleParser(raw)).text ?? '';
  const m = /http:\/\/\S+/.exec(text);
  if (!m) throw new Error(`no link in ${text}`);
  return m[0];
};

describe.each(DATABASES)('e-mail through SMTP (%s)', (kind) => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let hub: TestHub;
  let acme: TestOrg;
  const press = (url: string) =>
    fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: new URL(url).origin, 'content-type': 'application/x-www-form-urlencoded' },
    });

  beforeAll(async () => {
    smtp = await startSmtp();
    hub = await startTestHub(kind, { mail: { smtpUrl: smtp.url, from: 'svc hub <hub@acme.example>' } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => {
    await hub?.close();
    await smtp?.close();
  });

  it('an invitation by address is e-mailed, never shown to the admin; its link works once', async () => {
    const inv = await hub.request('POST', '/admin/invitations', {
      token: acme.adminKey,
      body: { email: 'erin@example.com', name: 'erin' },
      template: '/admin/invitations',
    });
    expect(inv.status, inv.text).toBe(201);
    expect(inv.body).toMatchObject({ emailed: true, sent_to: 'erin@example.com', user: { name: 'erin', created: true } });
    expect(inv.body.token).toBeUndefined();
    expect(inv.body.url).toBeUndefined();
    const mail = await smtp.next();
    expect(mail.rcpt).toEqual(['erin@example.com']);
    expect(mail.from).toBe('hub@acme.example');
    const parsed = await simpleParser(mail.raw);
    expect(parsed.subject).toBe('You are invited to acme on svc hub');
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value : []).toEqual([{ address: 'erin@example.com', name: 'erin' }]);
    const link = await linkIn(mail.raw);
    expect(link).toMatch(new RegExp(`^${hub.url}/invite/svc_inv_`));
    const first = await press(link);
    expect(first.status).toBe(201);
    expect(await first.text()).toMatch(/svc_sk_/);
    expect((await press(link)).status).toBe(410);
  });

  it('a sign-in link for someone who signed in before goes to their address only, and works once', async () => {
    const made = await hub.request('POST', '/admin/login-links', {
      token: acme.adminKey,
      body: { user: 'erin' },
      template: '/admin/login-links',
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({ emailed: true, sent_to: 'erin@example.com' });
    expect(made.body.url).toBeUndefined();
    const mail = await smtp.next();
    expect(mail.rcpt).toEqual(['erin@example.com']);
    const link = await linkIn(mail.raw);
    const signed = await press(link);
    expect(signed.status).toBe(303);
    expect(signed.headers.get('location')).toBe('/me/');
    expect((await press(link)).status).toBe(410);
  });

  it('never adds a header from a name, subject or address holding CR/LF', async () => {
    await sendMail(
      { smtpUrl: smtp.url, from: 'svc hub <hub@acme.example>' },
      {
        to: { address: 'erin@example.com', name: 'Erin\r\nBcc: mallory@evil.example\r\nX-Injected: 1' },
        subject: 'Hello\r\nBcc: mallory@evil.example\nX-Injected: 2',
        text: 'body',
      },
    );
    const mail = await smtp.next();
    expect(mail.rcpt).toEqual(['erin@example.com']);
    const headers = headerBlock(mail.raw);
    expect(headers).not.toMatch(/^(bcc|x-injected):/im);
    for (const line of headers.split('\r\n')) expect(line).not.toMatch(/^\s*(Bcc|X-Injected)\s*:/i);
    const parsed = await simpleParser(mail.raw);
    expect(parsed.headers.has('bcc')).toBe(false);
    expect(parsed.headers.has('x-injected')).toBe(false);
    await expect(
      sendMail(
        { smtpUrl: smtp.url, from: 'hub@acme.example' },
        { to: { address: 'erin@example.com\r\nBcc: mallory@evil.example' }, subject: 's', text: 't' },
      ),
    ).rejects.toThrow(/is not a plain address/);
    await expect(
      sendMail(
        { smtpUrl: smtp.url, from: 'hub@acme.example' },
        { to: { address: 'a@example.com, mallory@evil.example' }, subject: 's', text: 't' },
      ),
    ).rejects.toThrow(/is not a plain address/);
    // The REST route refuses such an address before anything is created.
    const refused = await hub.request('POST', '/admin/invitations', {
      token: acme.adminKey,
      body: { email: 'x@example.com\nBcc: mallory@evil.example' },
    });
    expect(refused.status).toBe(400);
    expect(smtp.inbox).toEqual([]);
  });

  it('an unreachable SMTP server is a 502 that says so, and nothing is left half made', async () => {
    const down = await startTestHub(kind, { mail: { smtpUrl: 'smtp://127.0.0.1:1', from: 'hub@acme.example' } });
    try {
      const org = await down.newOrg('beta');
      const r = await down.request('POST', '/admin/invitations', { token: org.adminKey, body: { email: 'fay@example.com' } });
      expect(r.status).toBe(502);
      expect(r.body.detail).toMatch(/^the e-mail to fay@example\.com could not be sent: /);
      expect((await down.request('GET', '/admin/users', { token: org.adminKey })).body.items.map((u: { name: string }) => u.name)).toEqual([
        'admin',
      ]);
    } finally {
      await down.close();
    }
  });

  // PostgreSQL only: PGlite is one connection, where any open transaction holds up every other.
  it.runIf(kind === 'postgres')(
    'a slow mail server holds up its invitation only: engram writes of the organization go on meanwhile',
    async () => {
      // A server that takes the message and answers only when told to.
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      let received!: () => void;
      const receiving = new Promise<void>((r) => (received = r));
      const slow = new SMTPServer({
        authOptional: true,
        disabledCommands: ['STARTTLS'],
        logger: false,
        onData(stream, _session, done) {
          stream.resume();
          stream.on('end', () => {
            received();
            void released.then(() => done());
          });
        },
      });
      await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
      const held = await startTestHub(kind, {
        mail: { smtpUrl: `smtp://127.0.0.1:${(slow.server.address() as AddressInfo).port}`, from: 'hub@acme.example' },
      });
      try {
        const org = await held.newOrg('gamma');
        const invite = held.request('POST', '/admin/invitations', { token: org.adminKey, body: { email: 'gus@example.com' } });
        await receiving; // the invitation's transaction is open, waiting on the server
        const creates = await Promise.all(
          [1, 2, 3].map((i) =>
            held.request('POST', '/engrams', {
              token: org.adminKey,
              body: { statement: `Written while mail waits ${i}`, scope: 'org:gamma' },
            }),
          ),
        );
        expect(creates.map((r) => r.status)).toEqual([201, 201, 201]);
        release();
        expect((await invite).status).toBe(201);
      } finally {
        release();
        await held.close();
        await new Promise<void>((r) => slow.close(() => r()));
      }
    },
  );

  it('checks the settings at start: both or neither, smtp:// or smtps://, a plain sender', async () => {
    const env = (e: Record<string, string>) => loadConfig(hub.db, { env: e });
    await expect(env({ SVC_HUB_SMTP_URL: 'smtp://127.0.0.1:25' })).rejects.toThrow(/SVC_HUB_MAIL_FROM/);
    await expect(env({ SVC_HUB_MAIL_FROM: 'hub@acme.example' })).rejects.toThrow(/SVC_HUB_SMTP_URL is not/);
    await expect(env({ SVC_HUB_SMTP_URL: 'http://mail', SVC_HUB_MAIL_FROM: 'hub@acme.example' })).rejects.toThrow(
      /must start with smtp:\/\/ or smtps:\/\//,
    );
    await expect(env({ SVC_HUB_SMTP_URL: 'smtp://mail', SVC_HUB_MAIL_FROM: 'not an address' })).rejects.toThrow(/SVC_HUB_MAIL_FROM/);
    expect((await env({ SVC_HUB_SMTP_URL: 'smtps://u:p@mail.example:465', SVC_HUB_MAIL_FROM: 'svc hub <hub@acme.example>' })).mail).toEqual(
      { smtpUrl: 'smtps://u:p@mail.example:465', from: 'svc hub <hub@acme.example>' },
    );
    expect((await env({})).mail).toBeUndefined();
  });
});
