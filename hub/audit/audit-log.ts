import { createHmac, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Database, Org, Queryable } from '../contracts.js';
import { canonicalJson } from '../../engine/canonical-json.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { asLogger, errorFields, type HubLogger, type LogOption } from '../observe/logger.js';
import { SqlWhere } from '../data/sql-where.js';
import { outboxSql } from '../webhooks/webhook-outbox.js';

// The audit log: one row per call, per organization, append-only (the database refuses UPDATE,
// DELETE and TRUNCATE on it: migration 007). Each row's hash is HMAC-SHA256(key, previous hash ‖
// canonical row), so editing, inserting or removing a row breaks the chain at that row, and only
// the key holder can forge one; signed checkpoints kept outside the database (checkpoints.ts)
// catch what the key holder could do: cut the tail or re-sign the chain. Appends of one
// organization are serialized by an advisory lock, across processes too.
//
// A write's row commits in the write's own transaction (appendAudit on the request's
// transaction). Other rows (reads, refusals) are queued and written in batches after the
// response by the AuditWriter: a crash loses at most its queue, and the writer's start and stop
// markers let verify say when that may have happened.

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

/** Actions the hub writes about the log itself. */
export const GAP_ACTION = 'audit.gap';
export const WRITER_START = 'audit.writer.start';
export const WRITER_STOP = 'audit.writer.stop';

const MAX_TEXT = 2000;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string PostgreSQL text and jsonb can hold: no NUL, no lone surrogate, bounded length. */
function safeText(s: string): string {
  const clean = s.replace(/\u0000/g, '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');
  return clean.length > MAX_TEXT ? `${clean.slice(0, MAX_TEXT)}…` : clean;
}

/** The same value with every string made storable and numbers finite (what is hashed is what is stored). */
function safeValue(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return safeText(v);
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (v === null || typeof v === 'boolean') return v;
  if (depth > 8 || typeof v !== 'object') return safeText(String(v));
  if (Array.isArray(v)) return v.slice(0, 100).map((x) => safeValue(x, depth + 1));
  return Object.fromEntries(
    Object.entries(v)
      .slice(0, 100)
      .map(([k, x]) => [safeText(k), safeValue(x, depth + 1)]),
  );
}

/** Any entry, made storable: whatever a request carried, its row can be written. */
export function safeEntry(e: AuditEntry): AuditEntry {
  return {
    at: e.at,
    actor: safeText(e.actor),
    token_id: e.token_id === null ? null : safeText(e.token_id),
    action: safeText(e.action),
    resource: e.resource === null ? null : safeText(e.resource),
    outcome: Number.isInteger(e.outcome) ? e.outcome : 0,
    details: safeValue(e.details) as Record<string, unknown>,
  };
}

export function rowHash(key: string, prevHash: string, seq: number, e: AuditEntry): string {
  // Keys sorted at every level: the same row always hashes the same.
  const body = canonicalJson({
    seq,
    at: e.at,
    actor: e.actor,
    token_id: e.token_id,
    action: e.action,
    resource: e.resource,
    outcome: e.outcome,
    details: e.details,
  });
  return createHmac('sha256', key).update(prevHash).update(body).digest('hex');
}

type AppendListener = (org: Org, rows: number) => void;
const appendListeners = new Set<AppendListener>();

/**
 * Calls `listener` after each append of this process (rows handed to the database, whose
 * transaction may still roll back): a hint that a chain grew, for checkpoints by row count.
 * Returns the unsubscribe.
 */
export function onAuditAppend(listener: AppendListener): () => void {
  appendListeners.add(listener);
  return () => void appendListeners.delete(listener);
}

/**
 * The last row this process appended to each organization's chain: the head its next append
 * expects. Only a guess (another process may have appended since, or the transaction rolled
 * back): the database checks it under the audit lock.
 */
const knownHeads = new Map<string, { seq: number; hash: string }>();

/** Appends entries to an organization's chain on `q`, which must be a transaction (the caller's). */
export async function appendAudit(q: Queryable, org: Org, key: string, entries: AuditEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const safe = entries.map(safeEntry);
  // One round trip while the lock is held when the guessed head is the chain's: the statement
  // takes the organization's audit lock, reads the head after it and appends only when it is
  // the one the rows were chained to; otherwise it answers the head, now held, and the rows are
  // chained again to it.
  let head = knownHeads.get(org.id) ?? { seq: 0, hash: GENESIS };
  for (let attempt = 0; ; attempt++) {
    const rows = chainRows(key, head, safe);
    const { sql, params } = appendStatement(org, head, rows, false);
    const answer = (await q.query<{ seq: number; hash: string; fits: boolean }>(sql, params)).rows[0]!;
    if (answer.fits) return noteAppended(org, rows);
    // eslint-disable-next-line no-restricted-syntax -- the head moved while this transaction held the lock: a bug, an internal error
    if (attempt > 0) throw new Error(`the audit chain of ${org.slug} moved under its lock`);
    head = { seq: Number(answer.seq), hash: answer.hash };
  }
}

/**
 * An append of `entries` chained to the head this process appended last, as one statement that
 * fails when the chain's head is another (another process appended since, or that append rolled
 * back): a caller may send it with its COMMIT in one round trip, and use appendAudit when it
 * fails. `appended()` once it committed, `failed()` when it did not.
 *
 * The rows are taken as the head at once, not when the commit's answer is read: the next write
 * of the organization waits for this one's locks and may be handed them, and so guess, before
 * this one's answer has been read.
 */
export function guessedAppend(
  org: Org,
  key: string,
  entries: AuditEntry[],
): { sql: string; params: unknown[]; appended(): void; failed(): void } {
  const head = knownHeads.get(org.id) ?? { seq: 0, hash: GENESIS };
  const rows = chainRows(key, head, entries.map(safeEntry));
  const last = rows[rows.length - 1]!;
  knownHeads.set(org.id, { seq: last.seq, hash: last.hash });
  return {
    ...appendStatement(org, head, rows, true),
    // Not noting the head again: a later write may have guessed on from it by now.
    appended: () => {
      for (const listener of appendListeners) listener(org, rows.length);
    },
    failed: () => {
      if (knownHeads.get(org.id)?.hash === last.hash) knownHeads.delete(org.id);
    },
  };
}

function noteAppended(org: Org, rows: AuditRow[]): void {
  const last = rows[rows.length - 1]!;
  knownHeads.set(org.id, { seq: last.seq, hash: last.hash });
  for (const listener of appendListeners) listener(org, rows.length);
}

/** Rows chained on from `head`. */
function chainRows(key: string, head: { seq: number; hash: string }, entries: AuditEntry[]): AuditRow[] {
  let { seq, hash: prev } = head;
  return entries.map((e) => {
    seq += 1;
    const hash = rowHash(key, prev, seq, e);
    const row = { ...e, seq, prev_hash: prev, hash };
    prev = hash;
    return row;
  });
}

/**
 * The statement that takes the organization's audit lock and appends `rows` (with their webhook
 * events) when the chain's head, read after the lock, is `head`. It answers that head and
 * whether it appended; `strict`, it fails instead when it did not.
 */
function appendStatement(
  org: Org,
  head: { seq: number; hash: string },
  rows: AuditRow[],
  strict: boolean,
): { sql: string; params: unknown[] } {
  const s = ident(org.schema);
  const params: unknown[] = [JSON.stringify(rows), org.schema, head.seq, head.hash, GENESIS, strict];
  const outbox = outboxSql(
    org,
    rows.map(({ prev_hash: _, ...row }) => ({ type: 'audit.entry', data: row })),
    params,
    'EXISTS (SELECT 1 FROM fits)',
  );
  const sql = `WITH head AS (
       SELECT coalesce(max(h.seq), 0) AS seq, coalesce(max(h.hash), $5) AS hash FROM ${CONTROL_SCHEMA}.audit_chain_head($2) h),
     fits AS (SELECT 1 FROM head WHERE head.seq = $3 AND head.hash = $4),
     appended AS (
       INSERT INTO ${s}.audit_log (seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash)
       SELECT x.seq, x.at, x.actor, x.token_id, x.action, x.resource, x.outcome, x.details, x.prev_hash, x.hash
         FROM jsonb_to_recordset($1::jsonb) AS x(seq bigint, at text, actor text, token_id text, action text, resource text,
                                                outcome int, details jsonb, prev_hash text, hash text)
        WHERE EXISTS (SELECT 1 FROM fits)),
     ${outbox.cte}
     SELECT head.seq, head.hash, woke.n,
            CASE WHEN EXISTS (SELECT 1 FROM fits) THEN true WHEN $6::boolean THEN ${CONTROL_SCHEMA}.audit_head_moved() ELSE false END AS fits
       FROM head, (${outbox.select}) woke`;
  return { sql, params };
}

export interface AuditGap {
  seq: number;
  lost: number;
  reason: string;
}

/** A batching writer whose stop marker is missing: it crashed (or is still running). */
export interface UnfinishedWriter {
  writer: string;
  started_seq: number;
  started_at: string;
}

export interface VerifyResult {
  ok: boolean;
  rows: number;
  /** The first row that breaks the chain, and how. */
  first_bad?: { seq: number; problem: string };
  /** Rows the hub recorded as lost (it could not write them). */
  gaps: AuditGap[];
  /** Batching writers with no stop marker: a crash there may have lost the reads in their queue. */
  unfinished: UnfinishedWriter[];
  /** The last row verified: what a checkpoint of this chain would sign. */
  head: { seq: number; hash: string };
}

/**
 * Walks an organization's chain, from the start or on from a head verified earlier; names the
 * first row that was edited, inserted or removed.
 */
export async function verifyAudit(db: Queryable, org: Org, key: string, from?: { seq: number; hash: string }): Promise<VerifyResult> {
  const s = ident(org.schema);
  let expectSeq = (from?.seq ?? 0) + 1;
  let prev = from?.hash ?? GENESIS;
  let count = from?.seq ?? 0;
  const gaps: AuditGap[] = [];
  const writers = new Map<string, UnfinishedWriter>();
  const PAGE = 5000;
  const result = (first_bad?: VerifyResult['first_bad']): VerifyResult => ({
    ok: !first_bad,
    rows: count,
    ...(first_bad ? { first_bad } : {}),
    gaps,
    unfinished: [...writers.values()],
    head: { seq: expectSeq - 1, hash: prev },
  });
  for (;;) {
    const page = (
      await db.query<AuditRow>(
        `SELECT seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash FROM ${s}.audit_log
        WHERE seq >= $1 ORDER BY seq LIMIT ${PAGE}`,
        [expectSeq],
      )
    ).rows;
    for (const r of page) {
      const seq = Number(r.seq);
      if (seq !== expectSeq)
        return result({ seq, problem: `row ${expectSeq} is missing (removed): the chain jumps from ${expectSeq - 1} to ${seq}` });
      if (r.prev_hash !== prev)
        return result({ seq, problem: 'its link to the previous row does not match (a row before it was removed or replaced)' });
      const entry: AuditEntry = {
        at: r.at,
        actor: r.actor,
        token_id: r.token_id,
        action: r.action,
        resource: r.resource,
        outcome: Number(r.outcome),
        details: r.details,
      };
      if (rowHash(key, prev, seq, entry) !== r.hash)
        return result({ seq, problem: 'its content does not match its signature (edited or inserted)' });
      if (r.action === GAP_ACTION) gaps.push({ seq, lost: Number(r.details.lost ?? 1), reason: String(r.details.reason ?? 'unknown') });
      const writer = typeof r.details.writer === 'string' ? r.details.writer : undefined;
      if (writer && r.action === WRITER_START) writers.set(writer, { writer, started_seq: seq, started_at: r.at });
      if (writer && r.action === WRITER_STOP) writers.delete(writer);
      prev = r.hash;
      expectSeq++;
      count++;
    }
    if (page.length < PAGE) break;
  }
  return result();
}

export interface AuditQuery {
  actor?: string;
  action?: string;
  resource?: string;
  from?: string;
  to?: string;
  /** Rows after this sequence number (pagination); with `newestFirst`, rows before it. */
  after?: number;
  newestFirst?: boolean;
  /** Leave out reads: GETs, the actions named here (reads by POST or MCP), and the audit writer's own markers. */
  changesOnly?: { reads: readonly string[] };
  limit: number;
}

export async function queryAudit(db: Queryable, org: Org, f: AuditQuery): Promise<AuditRow[]> {
  const w = new SqlWhere();
  if (f.actor) w.add('actor = ?', f.actor);
  if (f.action) w.add('action = ?', f.action);
  if (f.resource) w.add('resource = ?', f.resource);
  if (f.from) w.add('at >= ?', f.from);
  if (f.to) w.add('at <= ?', f.to);
  if (f.changesOnly) {
    w.raw("action NOT LIKE 'GET %' AND action NOT LIKE 'audit.writer.%'");
    w.add('action <> ALL (?::text[])', [...f.changesOnly.reads]);
  }
  if (f.after !== undefined) w.add(f.newestFirst ? 'seq < ?' : 'seq > ?', f.after);
  const r = await db.query<AuditRow>(
    `SELECT seq, at, actor, token_id, action, resource, outcome, details, prev_hash, hash FROM ${ident(org.schema)}.audit_log
      WHERE true${w.sql} ORDER BY seq${f.newestFirst ? ' DESC' : ''} LIMIT ${w.param(f.limit)}`,
    w.params,
  );
  return r.rows.map((x) => ({ ...x, seq: Number(x.seq), outcome: Number(x.outcome) }));
}

/** PostgreSQL error classes that no retry fixes for that row: data exceptions, integrity, limits. */
const rowIsTheProblem = (err: unknown): boolean => /^(22|23|54)/.test(String((err as { code?: string }).code ?? ''));

export interface AuditWriterOptions {
  /** Most rows waiting across organizations; past it rows are dropped and counted in a gap marker. */
  maxQueue?: number;
  /** The hub's logger, or a function given each message (tests). */
  log?: LogOption;
}

interface OrgQueue {
  org: Org;
  entries: AuditEntry[];
  /** Rows dropped (queue full) or unwritable, not yet recorded in a gap marker. */
  lost: { n: number; reasons: Set<string> };
  started: boolean;
  /** Rows of this organization this writer wrote. */
  written: number;
}

/**
 * Writes audit rows off the request path: entries queue per organization and flush in batches.
 * A batch that fails is retried row by row, so one row that cannot be stored becomes a gap
 * marker instead of holding back the rest; a database that is down is retried with backoff. The
 * queue is bounded. `close()` drains within its window, writes each organization's stop marker,
 * and then stops for good, whatever is left.
 */
export class AuditWriter {
  /** This writer's id in its start and stop markers. */
  readonly id = randomUUID();
  private readonly queues = new Map<string, OrgQueue>();
  private readonly maxQueue: number;
  private readonly log: HubLogger;
  private queued = 0;
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private failures = 0;
  private closed = false;
  /** Batch writes that failed (each retried). */
  private failedWrites = 0;
  /** Rows lost: queue full, unstorable, or unwritten at stop (each recorded in a gap marker where it can be). */
  private lostRows = 0;

  constructor(
    private readonly db: Database,
    private readonly key: string,
    opts: AuditWriterOptions = {},
  ) {
    this.maxQueue = opts.maxQueue ?? 10_000;
    this.log = asLogger(opts.log);
  }

  record(org: Org, entry: AuditEntry): void {
    const q = this.queue(org);
    if (this.closed || this.queued >= this.maxQueue) {
      q.lost.n++;
      this.lostRows++;
      q.lost.reasons.add(this.closed ? 'recorded after the audit writer closed' : `the audit queue was full (${this.maxQueue} rows)`);
      if (this.closed) return;
    } else {
      q.entries.push(safeEntry(entry));
      this.queued++;
    }
    this.schedule(0);
  }

  /** Rows waiting to be written. */
  get pending(): number {
    return this.queued;
  }

  /** What metrics and readiness read. */
  stats(): { pending: number; maxQueue: number; lostRows: number; failedWrites: number; failing: boolean; closed: boolean } {
    return {
      pending: this.queued,
      maxQueue: this.maxQueue,
      lostRows: this.lostRows,
      failedWrites: this.failedWrites,
      failing: this.failures > 0,
      closed: this.closed,
    };
  }

  private queue(org: Org): OrgQueue {
    let q = this.queues.get(org.id);
    if (!q) this.queues.set(org.id, (q = { org, entries: [], lost: { n: 0, reasons: new Set() }, started: false, written: 0 }));
    return q;
  }

  private schedule(delayMs: number): void {
    if (this.flushing || this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flushing = this.flushAll().finally(() => {
        this.flushing = null;
        const pending = [...this.queues.values()].some((q) => q.entries.length > 0 || q.lost.n > 0);
        if (pending) this.schedule(this.failures ? Math.min(5000, 50 * 2 ** Math.min(this.failures, 7)) : 0);
      });
    }, delayMs);
    this.timer.unref?.();
  }

  private marker(q: OrgQueue, action: string, details: Record<string, unknown>): AuditEntry {
    return {
      at: new Date().toISOString(),
      actor: 'svc-hub',
      token_id: null,
      action,
      resource: null,
      outcome: 0,
      details: { writer: this.id, ...details },
    };
  }

  /** What a flush of this organization writes: its start marker first, then a gap marker for what was lost, then the batch. */
  private batchFor(q: OrgQueue): { rows: AuditEntry[]; taken: number; lost: number } {
    const rows: AuditEntry[] = [];
    if (!q.started) rows.push(this.marker(q, WRITER_START, { pid: process.pid, host: hostname() }));
    const lost = q.lost.n;
    if (lost > 0) rows.push(this.marker(q, GAP_ACTION, { lost, reason: [...q.lost.reasons].join('; ') }));
    const taken = Math.min(q.entries.length, 500);
    rows.push(...q.entries.slice(0, taken));
    return { rows, taken, lost };
  }

  private accept(q: OrgQueue, taken: number, lost: number): void {
    q.started = true;
    q.entries.splice(0, taken);
    this.queued -= taken;
    q.written += taken;
    q.lost.n -= lost;
    if (q.lost.n === 0) q.lost.reasons.clear();
  }

  private async flushAll(): Promise<void> {
    for (const q of this.queues.values()) {
      if (q.entries.length === 0 && q.lost.n === 0) continue;
      const { rows, taken, lost } = this.batchFor(q);
      try {
        await this.db.transaction((tx) => this.append(tx, q.org, rows));
        this.accept(q, taken, lost);
        this.failures = 0;
      } catch (err) {
        if (this.closed) return;
        this.failedWrites++;
        if (!(await this.rowByRow(q, taken, err))) {
          this.failures++;
          if (this.failures === 1 || this.failures % 20 === 0)
            this.log.warn(
              { event: 'audit.retry', org: q.org.slug, failures: this.failures, queued: this.queued, ...errorFields(err) },
              `audit write failed (${(err as Error).message.split('\n')[0]}); retrying`,
            );
          return;
        }
      }
    }
  }

  /**
   * After a failed batch: writes its rows one at a time; a row the database refuses for what it
   * holds becomes part of a gap marker. False when the database itself is failing (retry later).
   */
  private async rowByRow(q: OrgQueue, taken: number, batchError: unknown): Promise<boolean> {
    if (!rowIsTheProblem(batchError)) return false;
    const { rows: head } = this.batchFor({ ...q, entries: [] });
    try {
      if (head.length > 0) await this.db.transaction((tx) => this.append(tx, q.org, head));
      this.accept(q, 0, q.lost.n);
    } catch {
      return false;
    }
    for (let i = 0; i < taken; i++) {
      const entry = q.entries[0]!;
      try {
        await this.db.transaction((tx) => this.append(tx, q.org, [entry]));
        q.written++;
      } catch (err) {
        if (!rowIsTheProblem(err)) return false;
        q.lost.n++;
        this.lostRows++;
        q.lost.reasons.add(`a ${entry.action} row could not be stored: ${(err as Error).message.split('\n')[0]}`);
        this.log.error(
          { event: 'audit.gap', org: q.org.slug, action: entry.action, ...errorFields(err) },
          `audit row for ${entry.action} could not be stored; a gap marker records it`,
        );
      }
      q.entries.shift();
      this.queued--;
    }
    return true;
  }

  /** A queued write; none starts once the writer is closed (a failed attempt must not land after close). */
  private async append(tx: Queryable, org: Org, rows: AuditEntry[]): Promise<void> {
    // eslint-disable-next-line no-restricted-syntax -- a write after close is a bug in the caller: an internal error
    if (this.closed) throw new Error('the audit writer is closed');
    await appendAudit(tx, org, this.key, rows);
  }

  /** Nothing queued, nothing lost to record, no write in flight. */
  private get idle(): boolean {
    return !this.flushing && [...this.queues.values()].every((q) => q.entries.length === 0 && q.lost.n === 0);
  }

  /** Waits until everything queued is written, or the time is up; true when nothing is left. Idle, it returns at once. */
  async drain(timeoutMs = 30_000): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (this.flushing) await within(this.flushing, until - Date.now());
      else if (this.idle) return true;
      else {
        if (this.timer) {
          clearTimeout(this.timer);
          this.timer = null;
        }
        this.schedule(0);
        await within(new Promise<void>(() => undefined), Math.min(20, until - Date.now()));
      }
      if (Date.now() >= until) return this.idle;
    }
  }

  /**
   * Drains within the window, then writes each organization's stop marker (rows written, rows
   * left unwritten), and stops for good: no retry outlives it.
   */
  async close(timeoutMs = 10_000): Promise<{ drained: boolean; unwritten: number }> {
    const started = Date.now();
    // Stopping waits only for rows still to write: say which, and for how long at most.
    if (!this.idle) {
      const what = this.queued ? `${this.queued} queued audit row${this.queued === 1 ? '' : 's'}` : 'the audit write in progress';
      this.log.info(
        { event: 'audit.drain', queued: this.queued, timeout_ms: timeoutMs },
        `stopping: writing ${what} first (at most ${timeoutMs / 1000} s)`,
      );
    }
    const drained = await this.drain(timeoutMs);
    const unwritten = this.queued;
    this.lostRows += unwritten;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // An attempt still in flight ends before close does (it can no longer start a write).
    if (this.flushing) await within(this.flushing, 2_000);
    if (drained) {
      const left = Math.max(0, timeoutMs - (Date.now() - started));
      for (const q of this.queues.values()) {
        if (!q.started) continue;
        const stop = this.marker(q, WRITER_STOP, { rows: q.written });
        await within(
          this.db.transaction((tx) => appendAudit(tx, q.org, this.key, [stop])).catch(() => undefined),
          left,
        );
      }
    } else
      this.log.error(
        { event: 'audit.closed', unwritten, timeout_ms: timeoutMs },
        `audit writer closed with ${unwritten} rows unwritten (the database did not take them within ${timeoutMs} ms)`,
      );
    return { drained, unwritten };
  }
}

/**
 * Waits for `work` at most `ms`. The timer goes when the work ends first: a timer left behind
 * would hold the process open for the rest of the window (a hub stopping idle took 10 s).
 */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([work, new Promise<void>((r) => (timer = setTimeout(r, Math.max(0, ms))))]);
  } finally {
    clearTimeout(timer);
  }
}
