import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database, Org, Queryable } from '../contracts.js';
import { canonicalJson } from '../../engine/canonical-json.js';
import { ident } from '../data/sql.js';
import { errorFields, type HubLogger } from '../observe/logger.js';
import { SvcError } from '../../engine/errors.js';
import { GENESIS, onAuditAppend, verifyAudit, type VerifyResult } from './audit-log.js';

// Signed checkpoints of an organization's audit chain head (sequence, hash, time), in the manner
// of CloudTrail digest files and Certificate Transparency's signed tree heads. They are meant to
// leave the database (a folder the hub writes at an interval, `svc hub audit checkpoint`, or an
// admin fetching GET /api/v1/admin/audit/checkpoint) so that someone who holds the database and
// the HMAC key still cannot cut the tail of the chain or re-sign it unnoticed: each checkpoint
// pins the hash of its row, and the Ed25519 signature pins the checkpoint.

export const CHECKPOINT_FORMAT = 'svc-audit-checkpoint/1';

export interface Checkpoint {
  format: typeof CHECKPOINT_FORMAT;
  org: string;
  org_id: string;
  /** Rows in the chain when it was signed; the last one's sequence number. */
  seq: number;
  /** That row's hash (GENESIS for an empty chain). */
  hash: string;
  at: string;
  key_id: string;
  /** Raw Ed25519 public key, base64url. */
  public_key: string;
  /** Ed25519 over the canonical JSON of every other field, base64url. */
  signature: string;
}

export interface CheckpointKey {
  id: string;
  publicKey: string;
  private: KeyObject;
}

/** The signing key from a PKCS#8 PEM. */
export function checkpointKey(pem: string): CheckpointKey {
  const priv = createPrivateKey(pem);
  if (priv.asymmetricKeyType !== 'ed25519')
    throw new SvcError('invalid', 'the audit checkpoint key must be an Ed25519 private key (PKCS#8 PEM)');
  const publicKey = createPublicKey(priv).export({ format: 'jwk' }).x!;
  return { id: keyId(publicKey), publicKey, private: priv };
}

const keyId = (publicKey: string): string => createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('hex').slice(0, 16);

const signedPart = (c: Omit<Checkpoint, 'signature'> | Checkpoint): string => {
  const { signature: _s, ...rest } = c as Checkpoint;
  return canonicalJson(rest);
};

export function signCheckpoint(key: CheckpointKey, org: Org, head: { seq: number; hash: string }, at = new Date()): Checkpoint {
  const body: Omit<Checkpoint, 'signature'> = {
    format: CHECKPOINT_FORMAT,
    org: org.slug,
    org_id: org.id,
    seq: head.seq,
    hash: head.hash,
    at: at.toISOString(),
    key_id: key.id,
    public_key: key.publicKey,
  };
  return { ...body, signature: sign(null, Buffer.from(signedPart(body)), key.private).toString('base64url') };
}

/** Why a checkpoint's signature does not hold, or null when it does. */
export function badSignature(c: Checkpoint): string | null {
  try {
    if (keyId(c.public_key) !== c.key_id) return 'its key id does not match its public key';
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: c.public_key }, format: 'jwk' });
    return verify(null, Buffer.from(signedPart(c)), pub, Buffer.from(c.signature, 'base64url')) ? null : 'its signature does not verify';
  } catch (err) {
    return `its signature cannot be checked (${(err as Error).message})`;
  }
}

export const checkpointFileName = (c: Checkpoint): string => `${c.org}-${String(c.seq).padStart(12, '0')}.json`;

/** Writes a checkpoint into a folder (atomically); an existing file for the same row is kept. */
export function writeCheckpoint(dir: string, c: Checkpoint): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, checkpointFileName(c));
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(c, null, 2) + '\n');
    renameSync(tmp, file);
  }
  return file;
}

/** Every checkpoint of one organization in a folder, with the files that could not be read. */
export function readCheckpoints(
  dir: string,
  orgSlug: string,
): { checkpoints: Array<{ file: string; checkpoint: Checkpoint }>; unreadable: string[] } {
  const checkpoints: Array<{ file: string; checkpoint: Checkpoint }> = [];
  const unreadable: string[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    try {
      const c = JSON.parse(readFileSync(join(dir, name), 'utf8')) as Checkpoint;
      if (c.format !== CHECKPOINT_FORMAT) continue;
      if (c.org === orgSlug) checkpoints.push({ file: name, checkpoint: c });
    } catch {
      unreadable.push(name);
    }
  }
  checkpoints.sort((a, b) => a.checkpoint.seq - b.checkpoint.seq);
  return { checkpoints, unreadable };
}

export interface CheckpointFinding {
  file: string;
  problem: string;
}

export interface CheckpointReport {
  checked: number;
  /** The newest checkpoint that holds: nothing up to it was removed, edited or re-signed. */
  latest?: { seq: number; at: string };
  /** The chain is shorter than a checkpoint signed: its tail was cut (the newest such checkpoint). */
  cut?: { file: string; seq: number; at: string; head: number };
  problems: CheckpointFinding[];
}

/**
 * Holds the chain against its checkpoints: each must be signed by a trusted key, and its row
 * must still be in the chain with the very hash it signed.
 */
export async function checkAgainstCheckpoints(
  db: Queryable,
  org: Org,
  chain: VerifyResult,
  checkpoints: Array<{ file: string; checkpoint: Checkpoint }>,
  trustedKeyIds: string[],
): Promise<CheckpointReport> {
  const problems: CheckpointFinding[] = [];
  let latest: CheckpointReport['latest'];
  let cut: CheckpointReport['cut'];
  for (const { file, checkpoint: c } of checkpoints) {
    const sig = badSignature(c);
    if (sig) {
      problems.push({ file, problem: `not a valid checkpoint: ${sig}` });
      continue;
    }
    if (!trustedKeyIds.includes(c.key_id)) {
      problems.push({
        file,
        problem: `signed by key ${c.key_id}, which this hub does not hold (trust it with --trust-key if it is an earlier key of yours)`,
      });
      continue;
    }
    if (c.org_id !== org.id) {
      problems.push({ file, problem: `made for another organization of the same name (id ${c.org_id})` });
      continue;
    }
    const rows = chain.ok ? chain.rows : chain.first_bad!.seq - 1;
    if (c.seq > rows) {
      const total = await chainLength(db, org);
      if (total < c.seq) cut = { file, seq: c.seq, at: c.at, head: total };
      problems.push({
        file,
        problem:
          total < c.seq
            ? `rows were removed: the checkpoint of ${c.at} saw ${c.seq} rows, the log now ends at row ${total}`
            : `row ${c.seq}, which the checkpoint of ${c.at} signed, is past the first broken row`,
      });
      continue;
    }
    const hash =
      c.seq === 0
        ? GENESIS
        : (await db.query<{ hash: string }>(`SELECT hash FROM ${ident(org.schema)}.audit_log WHERE seq = $1`, [c.seq])).rows[0]?.hash;
    if (hash !== c.hash) {
      problems.push({ file, problem: `row ${c.seq} is not the row the checkpoint of ${c.at} signed: the chain was edited and re-signed` });
      continue;
    }
    latest = { seq: c.seq, at: c.at };
  }
  return { checked: checkpoints.length, ...(latest ? { latest } : {}), ...(cut ? { cut } : {}), problems };
}

/** The chain's last sequence number (0 when empty), without walking it. */
async function chainLength(db: Queryable, org: Org): Promise<number> {
  return Number(
    (await db.query<{ n: number }>(`SELECT coalesce(max(seq), 0)::bigint AS n FROM ${ident(org.schema)}.audit_log`)).rows[0]!.n,
  );
}

/**
 * Why the hub must not append to an organization's chain, or null: the newest checkpoint in the
 * folder (signed by a trusted key, for this organization) signed a row the chain no longer has,
 * or has with another hash. Appending would bury the cut under new rows. Walks nothing: one
 * query or two per organization.
 */
export async function chainBelowCheckpoint(db: Queryable, org: Org, dir: string, trustedKeyIds: string[]): Promise<string | null> {
  if (!existsSync(dir)) return null;
  const valid = readCheckpoints(dir, org.slug).checkpoints.filter(
    ({ checkpoint: c }) => c.org_id === org.id && trustedKeyIds.includes(c.key_id) && badSignature(c) === null,
  );
  const newest = valid.at(-1);
  if (!newest) return null;
  const c = newest.checkpoint;
  const head = await chainLength(db, org);
  if (head < c.seq)
    return `the audit chain of ${org.slug} ends at row ${head}, but checkpoint ${newest.file} (${c.at}) signed row ${c.seq}: its tail was cut`;
  const hash =
    c.seq === 0
      ? GENESIS
      : (await db.query<{ hash: string }>(`SELECT hash FROM ${ident(org.schema)}.audit_log WHERE seq = $1`, [c.seq])).rows[0]?.hash;
  if (hash !== c.hash)
    return `row ${c.seq} of the audit chain of ${org.slug} (which ends at row ${head}) is not the row checkpoint ${newest.file} (${c.at}) signed: the chain was cut and written again, or re-signed`;
  return null;
}

/** When checkpoints are written into the folder: after this many rows, or this long after a row. */
export interface CheckpointSchedule {
  everyRows: number;
  everyMs: number;
}

/**
 * Writes checkpoints into a folder: of every organization whose chain grew, every `everyMs`, and
 * of one as soon as this process appended `everyRows` rows to it. A cut of the tail after the
 * newest checkpoint is what no checkpoint can show, so the schedule bounds it: at most about
 * everyRows rows or everyMs of them. Writes run one at a time.
 */
export class CheckpointWriter {
  private readonly grown = new Map<string, { org: Org; rows: number }>();
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout;
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly checkpointer: Checkpointer,
    private readonly dir: string,
    schedule: CheckpointSchedule,
    private readonly allOrgs: () => Promise<Org[]>,
    private readonly log: HubLogger,
  ) {
    this.unsubscribe = onAuditAppend((org, rows) => {
      const g = this.grown.get(org.id) ?? { org, rows: 0 };
      g.rows += rows;
      this.grown.set(org.id, g);
      // After the append's transaction commits (a later tick catches a slower one).
      if (g.rows >= schedule.everyRows) setTimeout(() => this.run([org]), 50).unref();
    });
    this.timer = setInterval(() => this.run(null), schedule.everyMs);
    this.timer.unref();
  }

  /** Checkpoints these organizations (null: every one), after the writes queued before. */
  run(orgs: Org[] | null): Promise<void> {
    this.queue = this.queue
      .then(async () => {
        if (this.closed) return;
        const all = await this.allOrgs();
        // Appends are heard process-wide: only this database's organizations are ours.
        const list = orgs ? all.filter((o) => orgs.some((x) => x.id === o.id)) : all;
        for (const org of list) this.grown.delete(org.id);
        const r = await this.checkpointer.writeAll(this.dir, list);
        for (const f of r.failed) this.log.error({ event: 'audit.checkpoint_failed', reason: f }, `audit checkpoint not written: ${f}`);
      })
      .catch((err: Error) =>
        this.log.error({ event: 'audit.checkpoint_failed', ...errorFields(err) }, `audit checkpoints failed: ${err.message}`),
      );
    return this.queue;
  }

  /** Stops, after a last checkpoint of what grew (so a clean stop leaves nothing unpinned). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.unsubscribe();
    const grown = [...this.grown.values()].map((g) => g.org);
    if (grown.length > 0) await this.run(grown);
    this.closed = true;
    await this.queue;
  }
}

/**
 * Signs checkpoints of verified chain heads. It remembers the last head it verified per
 * organization, so each new checkpoint walks only the rows added since.
 */
export class Checkpointer {
  private readonly heads = new Map<string, { seq: number; hash: string }>();

  constructor(
    private readonly db: Database,
    private readonly auditKey: string,
    readonly key: CheckpointKey,
  ) {}

  /** A signed checkpoint of the chain as it stands; refuses (throws) when the chain is broken. */
  async current(org: Org): Promise<Checkpoint> {
    const from = this.heads.get(org.id);
    const chain = await verifyAudit(this.db, org, this.auditKey, from);
    if (!chain.ok)
      throw new SvcError(
        'conflict',
        `the audit chain of ${org.slug} is broken at row ${chain.first_bad!.seq} (${chain.first_bad!.problem}); no checkpoint signed`,
      );
    this.heads.set(org.id, chain.head);
    return signCheckpoint(this.key, org, chain.head);
  }

  /** The whole chain walked from its first row (the admin UI shows this): what breaks it, if anything. */
  verifyChain(org: Org): Promise<VerifyResult> {
    return verifyAudit(this.db, org, this.auditKey);
  }

  /** Writes a checkpoint of every organization whose chain grew since its last one in `dir`. */
  async writeAll(dir: string, orgs: Org[]): Promise<{ written: string[]; failed: string[] }> {
    const written: string[] = [];
    const failed: string[] = [];
    for (const org of orgs) {
      try {
        const c = await this.current(org);
        const file = join(dir, checkpointFileName(c));
        if (!existsSync(file)) written.push(writeCheckpoint(dir, c));
      } catch (err) {
        failed.push(`${org.slug}: ${(err as Error).message}`);
      }
    }
    return { written, failed };
  }
}

/**
 * Refuses (throws, one line) to let the hub append to any organization's chain that is shorter
 * than, or differs at, its newest checkpoint in the folder.
 */
export async function refuseCutChains(db: Queryable, dir: string, trustedKeyIds: string[], orgs: Org[]): Promise<void> {
  const found: string[] = [];
  for (const org of orgs) {
    const why = await chainBelowCheckpoint(db, org, dir, trustedKeyIds);
    if (why) found.push(why);
  }
  if (found.length === 0) return;
  const more = found.length > 1 ? ` (and ${found.length - 1} more organization${found.length > 2 ? 's' : ''})` : '';
  throw new SvcError(
    'conflict',
    `svc hub will not append to a cut audit chain: ${found[0]}${more}; restore the rows, or move the checkpoint out of ${dir} once you have looked into it`,
  );
}
