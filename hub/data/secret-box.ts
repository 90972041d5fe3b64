import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Database, Queryable } from '../contracts.js';
import { invalid, SvcError } from '../../engine/errors.js';
import { CONTROL_SCHEMA, ident } from './sql.js';
import { listOrgs } from './organizations.js';

// Secrets at rest: what the hub must read back in clear (webhook secrets, identity providers'
// client secrets, the signing keys it generated into the control schema) is sealed with
// AES-256-GCM under a key-encryption key from the environment, SVC_HUB_SECRET_KEY (32 random
// bytes, base64 or hex). A sealed value describes itself, `enc:v1:<key id>:<iv>:<ciphertext+tag>`,
// the key id being a short hash of the key that sealed it, so a value is opened with the current
// key or any earlier one listed in SVC_HUB_SECRET_KEY_OLD, and `svc hub secrets rotate` knows what
// to re-seal. A value without the prefix is one stored before a key was set: it is read as it is
// until rotate seals it. Without a key the hub stores secrets as given (and warns at start).
// Tokens, API keys, session and link secrets are kept only as SHA-256 hashes: nothing to seal.

export const SECRET_KEY_ENV = 'SVC_HUB_SECRET_KEY';
export const OLD_SECRET_KEYS_ENV = 'SVC_HUB_SECRET_KEY_OLD';

const PREFIX = 'enc:v1:';
const SEALED = /^enc:v1:([0-9a-f]{12}):([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22,})$/;

export interface SecretBox {
  /** The current key's id; null: no key is set and secrets are stored as given. */
  readonly keyId: string | null;
  /** The value to store: sealed under the current key, or as given when there is none. */
  seal(plain: string): string;
  /** The clear value of a stored one: opened with whichever key sealed it, or as it is when it was never sealed. */
  open(stored: string): string;
  /** Whether a stored value is sealed under the current key already (rotate leaves it). */
  isCurrent(stored: string): boolean;
}

export const isSealed = (stored: string): boolean => stored.startsWith(PREFIX);

/** The id a sealed value names its key by: 12 hex digits of a hash of the key (not of anything sealed). */
export const secretKeyId = (key: Buffer): string =>
  createHash('sha256').update('svc-hub-secret-key\0').update(key).digest('hex').slice(0, 12);

/** 32 bytes given as 64 hex digits or as base64 (padded or not, base64url too); a clear error naming the variable otherwise, never the value. */
export function parseSecretKey(raw: string, name = SECRET_KEY_ENV): Buffer {
  const text = raw.trim();
  let key: Buffer | undefined;
  if (/^[0-9a-fA-F]{64}$/.test(text)) key = Buffer.from(text, 'hex');
  else if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) key = Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (!key || key.length !== 32)
    throw invalid(
      `${name} must be 32 random bytes as 64 hex digits or 44 base64 characters, e.g. from "openssl rand -base64 32" (got ${text.length} characters)`,
    );
  return key;
}

const b64 = (b: Buffer): string => b.toString('base64url');

export function secretBox(current: Buffer | null, old: Buffer[] = []): SecretBox {
  const keys = new Map<string, Buffer>();
  for (const k of [...old, ...(current ? [current] : [])]) keys.set(secretKeyId(k), k);
  const keyId = current ? secretKeyId(current) : null;
  return {
    keyId,
    seal(plain) {
      if (!current || !keyId) return plain;
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(Buffer.from(PREFIX + keyId));
      const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${PREFIX}${keyId}:${b64(iv)}:${b64(sealed)}`;
    },
    open(stored) {
      if (!isSealed(stored)) return stored;
      const m = SEALED.exec(stored);
      if (!m) throw new SvcError('storage', 'a sealed secret in the database is malformed');
      const [, id, iv, body] = m as unknown as [string, string, string, string];
      const key = keys.get(id);
      if (!key)
        throw new SvcError(
          'storage',
          `a secret in the database is sealed under key ${id}, which neither ${SECRET_KEY_ENV} (${keyId ?? 'not set'}) nor ${OLD_SECRET_KEYS_ENV} holds`,
        );
      const data = Buffer.from(body, 'base64url');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(PREFIX + id));
        decipher.setAuthTag(data.subarray(data.length - 16));
        return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
      } catch {
        throw new SvcError('storage', `a secret in the database sealed under key ${id} does not open: it was altered`);
      }
    },
    isCurrent: (stored) => keyId !== null && stored.startsWith(`${PREFIX}${keyId}:`),
  };
}

/** Secrets stored as given; opening a sealed one fails, naming its key. */
export const PLAIN_BOX: SecretBox = secretBox(null);

/** The box SVC_HUB_SECRET_KEY and SVC_HUB_SECRET_KEY_OLD (a comma list) describe; a bad key is refused in one line. */
export function secretBoxFromEnv(env: NodeJS.ProcessEnv = process.env): SecretBox {
  const raw = env[SECRET_KEY_ENV]?.trim();
  const old = (env[OLD_SECRET_KEYS_ENV] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s, i) => parseSecretKey(s, `${OLD_SECRET_KEYS_ENV} (key ${i + 1})`));
  if (!raw && old.length > 0)
    throw invalid(`${OLD_SECRET_KEYS_ENV} is set without ${SECRET_KEY_ENV}: set the key secrets are sealed under now`);
  return secretBox(raw ? parseSecretKey(raw) : null, old);
}

/** What the hub warns at start when no key is set. */
export const NO_SECRET_KEY_WARNING = `${SECRET_KEY_ENV} is not set: webhook secrets, identity-provider client secrets and the signing keys kept in the database are stored in clear, readable by whoever can read the database or a backup of it`;

/** Every sealed column: table (in each organization's schema, or the control schema), its key column, and the secret column. */
const ORG_SECRETS = [
  { table: 'webhooks', id: 'id', column: 'secret' },
  { table: 'identity_providers', id: 'id', column: 'client_secret' },
] as const;

export interface ResealCounts {
  /** Stored in clear before, sealed now. */
  sealed: number;
  /** Sealed under an earlier key before, under the current one now. */
  resealed: number;
  /** Sealed under the current key already. */
  unchanged: number;
}

export interface ResealReport {
  keyId: string;
  control: ResealCounts;
  orgs: Array<{ slug: string } & ResealCounts>;
}

async function resealColumn(q: Queryable, box: SecretBox, table: string, id: string, column: string, counts: ResealCounts): Promise<void> {
  const rows = await q.query<{ id: string; value: string }>(
    `SELECT ${ident(id)} AS id, ${ident(column)} AS value FROM ${table} WHERE ${ident(column)} IS NOT NULL FOR UPDATE`,
  );
  for (const r of rows.rows) {
    if (box.isCurrent(r.value)) {
      counts.unchanged++;
      continue;
    }
    if (isSealed(r.value)) counts.resealed++;
    else counts.sealed++;
    await q.query(`UPDATE ${table} SET ${ident(column)} = $2 WHERE ${ident(id)} = $1`, [r.id, box.seal(box.open(r.value))]);
  }
}

/**
 * Re-seals every stored secret under the box's current key: the control schema's in one
 * transaction, each organization's in one of its own. Values sealed under it already are left,
 * so running it again changes nothing; one that no given key opens fails its transaction.
 */
export async function resealAll(db: Database, box: SecretBox): Promise<ResealReport> {
  if (!box.keyId) throw invalid(`${SECRET_KEY_ENV} is not set: there is no key to seal the secrets under`);
  const zero = (): ResealCounts => ({ sealed: 0, resealed: 0, unchanged: 0 });
  const control = zero();
  await db.transaction((q) => resealColumn(q, box, `${CONTROL_SCHEMA}.secrets`, 'name', 'value', control));
  const orgs: ResealReport['orgs'] = [];
  for (const org of await listOrgs(db)) {
    const counts = zero();
    await db.transaction(async (q) => {
      for (const t of ORG_SECRETS) await resealColumn(q, box, `${ident(org.schema)}.${t.table}`, t.id, t.column, counts);
    });
    orgs.push({ slug: org.slug, ...counts });
  }
  return { keyId: box.keyId, control, orgs };
}
