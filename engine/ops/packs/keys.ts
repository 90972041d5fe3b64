import { existsSync, linkSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { invalid, notFound, SvcError } from '../../errors.js';
import { writeFileDurable } from '../../store/durable-write.js';
import { generateSigningKey, isPublicKey, pemSigner, shortKey, type PackSigner, type PackTrust, type TrustedKey } from './signing.js';

// This machine's pack keys, in `<store>/pack-keys.yaml` beside local.yaml and, like it, never
// committed or synced (the store's .gitignore gets a line for it when the file is made): the
// creator key this store signs its exports with (made on the first export) and the keys of
// other creators the user trusts (`svc packs trust`). A synced trust list would let anyone who
// can push to a shared store decide what this machine trusts.
//
//   signing_key: <PKCS#8 PEM>        public_key: ed25519:...
//   trusted: [{ key: ed25519:..., label: bob, added_at: <ISO 8601> }]

export const KEYS_FILE = 'pack-keys.yaml';
/** It holds a private key: readable by its owner only, from the first byte. */
const PRIVATE = 0o600;

interface KeysDoc {
  signing_key?: string;
  public_key?: string;
  trusted?: Array<{ key: string; label: string; added_at: string }>;
}

export class FilePackKeys implements PackTrust {
  private readonly path: string;

  constructor(private readonly storeRoot: string) {
    this.path = join(storeRoot, KEYS_FILE);
  }

  /** The store's own public key, if it has made one (derived from the private key: public_key is for people to read). */
  async ownKey(): Promise<string | null> {
    return ownKeyOf(await this.read());
  }

  async trusted(): Promise<TrustedKey[]> {
    const doc = await this.read();
    const mine = ownKeyOf(doc);
    const own: TrustedKey[] = mine ? [{ key: mine, label: 'you', own: true }] : [];
    return [...own, ...(doc.trusted ?? []).filter((t) => t.key !== mine).map((t) => ({ key: t.key, label: t.label, own: false }))];
  }

  /** The creator key, made on first use. */
  async signer(): Promise<PackSigner> {
    let doc = await this.read();
    if (!doc.signing_key) {
      const made = generateSigningKey();
      const next = { ...doc, signing_key: made.privatePem, public_key: made.publicKey };
      // Two first exports at once: the file made first wins, and both sign with its key.
      if (existsSync(this.path)) await this.write(next);
      else this.create(await this.text(next));
      doc = await this.read();
    }
    // Every export checks the line is still there (a .gitignore can be rewritten or merged away).
    this.ignoreInGit();
    try {
      return pemSigner(doc.signing_key!);
    } catch {
      throw new SvcError('storage', `${this.path} holds no usable signing key: move it aside and export again to make a new one`);
    }
  }

  async trust(key: string, label: string, now: Date): Promise<{ key: string; label: string; added: boolean }> {
    if (!isPublicKey(key))
      throw invalid(
        `"${shortKey(key)}" is not a pack public key: expected ed25519:<43 base64url characters> (svc packs preview shows a pack's signer)`,
      );
    const doc = await this.read();
    if (key === ownKeyOf(doc)) return { key, label: 'you', added: false };
    const list = doc.trusted ?? [];
    if (list.some((t) => t.key === key)) return { key, label: list.find((t) => t.key === key)!.label, added: false };
    await this.write({ ...doc, trusted: [...list, { key, label, added_at: now.toISOString() }] });
    return { key, label, added: true };
  }

  async untrust(key: string): Promise<{ key: string; label: string }> {
    const doc = await this.read();
    if (key === ownKeyOf(doc)) throw invalid('that is your own key: packs you export are always trusted here');
    const found = (doc.trusted ?? []).find((t) => t.key === key);
    if (!found) throw notFound(`key ${shortKey(key)} is not trusted (svc packs trust --list shows the trusted keys)`);
    await this.write({ ...doc, trusted: (doc.trusted ?? []).filter((t) => t.key !== key) });
    return { key, label: found.label };
  }

  private async read(): Promise<KeysDoc> {
    if (!existsSync(this.path)) return {};
    const { parse } = await import('yaml');
    let value: unknown;
    try {
      value = parse(readFileSync(this.path, 'utf8'));
    } catch (err) {
      throw new SvcError('storage', `${this.path} is unreadable: ${(err as Error).message.split('\n')[0]}; fix or move it aside`);
    }
    if (value === null || value === undefined) return {};
    if (typeof value !== 'object' || Array.isArray(value))
      throw new SvcError('storage', `${this.path} is not a key file (expected a mapping); fix or move it aside`);
    const doc = value as KeysDoc;
    return {
      ...doc,
      trusted: Array.isArray(doc.trusted) ? doc.trusted.filter((t) => t && typeof t.key === 'string' && isPublicKey(t.key)) : [],
    };
  }

  private async text(doc: KeysDoc): Promise<string> {
    const { stringify } = await import('yaml');
    return `# This machine's pack keys (svc packs): never commit or share this file.\n${stringify(doc, { lineWidth: 0 })}`;
  }

  /** Writes the file only if it does not exist yet (another process may have made it first). */
  private create(text: string): void {
    const tmp = join(this.storeRoot, `.tmp-${KEYS_FILE}-${process.pid}-${randomBytes(4).toString('hex')}`);
    writeFileDurable(tmp, text, { mode: PRIVATE });
    try {
      linkSync(tmp, this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(tmp);
    }
    this.ignoreInGit();
  }

  private async write(doc: KeysDoc): Promise<void> {
    writeFileDurable(this.path, await this.text(doc), { mode: PRIVATE });
    this.ignoreInGit();
  }

  /** Adds the key file to the store's .gitignore, beside local.yaml's line. */
  private ignoreInGit(): void {
    const path = join(this.storeRoot, '.gitignore');
    const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
    if (text.split('\n').some((l) => l.trim() === KEYS_FILE)) return;
    writeFileDurable(path, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${KEYS_FILE}\n`);
  }
}

function ownKeyOf(doc: KeysDoc): string | null {
  if (!doc.signing_key) return null;
  try {
    return pemSigner(doc.signing_key).publicKey;
  } catch {
    return null;
  }
}
