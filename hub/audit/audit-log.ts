import { createHmac } from 'node:crypto';
import type { Database, Org } from '../contracts.js';
import { canonicalJson } from '../../engine/packs/format.js';
import { ident } from '../data/migrate.js';
import { SqlWhere } from '../data/sql-where.js';

// The audit log: one row per call, per organization, append-only. Each row's hash is
// HMAC-SHA256(key, previous hash ‖ canonical row), so editing, inserting or removing any row
// breaks the chain at that row, and only the key holder can forge one. Appends of one
// organization are serialized by an advisory lock; across processes too.

export interface AuditEntry {
  at: string;
  actor: string;
  token_id: string | null;
  action: string;
  resource: string | null;
  outcome: number;
  details: Record<string, unknown>;
}

export interface AuditRow extends AuditEntry {
  seq: number;
  prev_hash: string;
  hash: string;
}

export const GENESIS = '0'.repeat(64);

export function rowHash(key: string, prevHash: string, seq: number, e: AuditEntry): string {
  // Keys sorted at every level: the same row always hashes the same.
  const body = canonicalJson({ seq, at: e.at, actor: e.actor, token_id: e.token_id, action: e.action, resource: e.resource, outcome: e.outcome, details: e.details });
  return createHmac('sha256', key).update(prevHash).update(body).digest('hex');
}

export async function appendAudit(db: Database, org: Org, key: string, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const s = ident(org.schema);
  await db.transaction(async (q) => {
    await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc_hub:audit:${org.schema}`]);
    const last = (await q.query<{ seq: number; hash: string }>(`SELECT seq, hash FROM ${s}.audit_log ORDER BY seq DESC LIMIT 1`)).rows[0];
    let seq = last ? Number(last.seq) : 0;
    let prev = last?.hash ?? GENESIS;
    const rows: AuditRow[] = [];
    for (const e of entries) {
      seq += 1;
      const hash = rowHash(key, prev, seq, e);
      rows.push({ ...e, seq, prev_hash: prev, hash });
      prev = hash;
    }
    await q.query(
      `INSERT INTO ${s}.audit_log (seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash)
       SELECT x.seq, x.at, x.actor, x.token_id, x.action, x.resource, x.outcome, x.details, x.prev_hash, x.hash
         FROM jsonb_to_recordset($1::jsonb) AS x(seq bigint, at text, actor text, token_id text, action text, resource text,
                                                outcome int, details jsonb, prev_hash text, hash text)`,
      [JSON.stringify(rows)],
    );
  });
}

export interface VerifyResult {
  ok: boolean;
  rows: number;
  /** The first row that breaks the chain, and how. */
  first_bad?: { seq: number; problem: string };
}

/** Walks an organization's whole chain; names the first row that was edited, inserted or removed. */
export async function verifyAudit(db: Database, org: Org, key: string): Promise<VerifyResult> {
  const s = ident(org.schema);
  let expectSeq = 1;
  let prev = GENESIS;
  let count = 0;
  const PAGE = 5000;
  for (;;) {
    const page = (await db.query<AuditRow>(
      `SELECT seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash FROM ${s}.audit_log
        WHERE seq >= $1 ORDER BY seq LIMIT ${PAGE}`,
      [expectSeq],
    )).rows;
    for (const r of page) {
      const seq = Number(r.seq);
      if (seq !== expectSeq) return { ok: false, rows: count, first_bad: { seq, problem: `row ${expectSeq} is missing (removed): the chain jumps from ${expectSeq - 1} to ${seq}` } };
      if (r.prev_hash !== prev) return { ok: false, rows: count, first_bad: { seq, problem: 'its link to the previous row does not match (a row before it was removed or replaced)' } };
      const entry: AuditEntry = { at: r.at, actor: r.actor, token_id: r.token_id, action: r.action, resource: r.resource, outcome: Number(r.outcome), details: r.details };
      if (rowHash(key, prev, seq, entry) !== r.hash) return { ok: false, rows: count, first_bad: { seq, problem: 'its content does not match its signature (edited or inserted)' } };
      prev = r.hash;
      expectSeq++;
      count++;
    }
    if (page.length < PAGE) break;
  }
  return { ok: true, rows: count };
}

export interface AuditQuery {
  actor?: string;
  action?: string;
  resource?: string;
  from?: string;
  to?: string;
  /** Rows after this sequence number (pagination). */
  after?: number;
  limit: number;
}

export async function queryAudit(db: Database, org: Org, f: AuditQuery): Promise<AuditRow[]> {
  const w = new SqlWhere();
  if (f.actor) w.add('actor = ?', f.actor);
  if (f.action) w.add('action = ?', f.action);
  if (f.resource) w.add('resource = ?', f.resource);
  if (f.from) w.add('at >= ?', f.from);
  if (f.to) w.add('at <= ?', f.to);
  if (f.after !== undefined) w.add('seq > ?', f.after);
  const r = await db.query<AuditRow>(
    `SELECT seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash FROM ${ident(org.schema)}.audit_log
      WHERE true${w.sql} ORDER BY seq LIMIT ${w.param(f.limit)}`,
    w.params,
  );
  return r.rows.map((x) => ({ ...x, seq: Number(x.seq), outcome: Number(x.outcome) }));
}

/**
 * Writes audit rows off the request path: entries queue per organization and flush in batches;
 * a failed flush is retried with backoff (never raised to a caller). `drain()` waits for the
 * queue (tests, shutdown).
 */
export class AuditWriter {
  private readonly queues = new Map<string, { org: Org; entries: AuditEntry[] }>();
  private flushing: Promise<void> | null = null;
  private failures = 0;

  constructor(
    private readonly db: Database,
    private readonly key: string,
    private readonly log: (message: string) => void = (m) => process.stderr.write(`svc hub: ${m}\n`),
  ) {}

  record(org: Org, entry: AuditEntry): void {
    let q = this.queues.get(org.id);
    if (!q) this.queues.set(org.id, (q = { org, entries: [] }));
    q.entries.push(entry);
    this.schedule(0);
  }

  private schedule(delayMs: number): void {
    if (this.flushing) return;
    this.flushing = new Promise<void>((resolve) => setTimeout(resolve, delayMs)).then(() => this.flushAll());
  }

  private async flushAll(): Promise<void> {
    let failed = false;
    for (const q of this.queues.values()) {
      if (q.entries.length === 0) continue;
      const batch = q.entries.splice(0, 500);
      try {
        await appendAudit(this.db, q.org, this.key, batch);
        this.failures = 0;
      } catch (err) {
        q.entries.unshift(...batch);
        failed = true;
        this.failures++;
        if (this.failures === 1 || this.failures % 20 === 0) this.log(`audit write failed (${(err as Error).message}); retrying`);
      }
    }
    this.flushing = null;
    const pending = [...this.queues.values()].some((q) => q.entries.length > 0);
    if (pending) this.schedule(failed ? Math.min(5000, 50 * 2 ** Math.min(this.failures, 7)) : 0);
  }

  async drain(timeoutMs = 30_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (this.flushing) await this.flushing;
      else if ([...this.queues.values()].every((q) => q.entries.length === 0)) return true;
      else this.schedule(0);
    }
    return false;
  }
}
