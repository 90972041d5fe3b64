import { randomBytes } from 'node:crypto';
import type { EngramWriter, ListFilter, SearchHit, StoreStats, VectorHit } from '../../engine/backend.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../../engine/model/records.js';
import type { Embedder } from '../../engine/embed/embedder.js';
import { idDay } from '../../engine/model/ids.js';
import type { AccessPolicy, Database, EngramPageFilter, Org, OrgBackend } from '../contracts.js';
import { ident } from '../data/sql.js';
import { SqlWhere } from '../data/sql-where.js';
import { getDoc, readableIds, scopeClause, visible, type OrgView } from './pg-view.js';
import { embedPending, searchText, searchVector, vectorPath } from './pg-search.js';
import { writeUnit } from './pg-writes.js';
import { appendEpisodes, appendEvents, getEpisode, getSession, listEvents, putSession, queryEpisodes, sessionsOf } from './pg-records.js';

// The engine's backend on one organization's PostgreSQL schema. The engine's operations (learn,
// recall, inject, forget, ...) run on it unchanged. Nothing that matters is kept in memory:
// several hub processes share the database (BM25 postings a process holds in memory are checked
// against the database's revision on each use: postings-cache.ts). Writes of one organization are
// serialized by a transaction-scoped advisory lock (content-hash dedup and id allocation stay race-free across
// processes).
// The class answers the engine's interface; search (pg-search.ts), writes (pg-writes.ts), the
// episodes, sessions and events (pg-records.ts) and the caller's view of the schema
// (pg-view.ts) are functions it delegates to.

/**
 * The caller's policy (hub/access/policy.ts): every read sees only what it may read (a hidden
 * engram looks exactly like a missing one) and every write is checked by it. Without one, the
 * backend is the hub's own (migrations, benchmarks, the webhook worker): it reads and writes all.
 */
export function openOrgBackend(db: Database, org: Org, policy: AccessPolicy | null): PgBackend {
  return new PgBackend(db, org, policy);
}

export class PgBackend implements OrgBackend {
  /** The hub never stores what looks like a secret: learn and pack install refuse it. */
  readonly secretPolicy = 'refuse' as const;
  private readonly s: string;
  /** Scopes the caller may read; null: all. */
  readonly readable: readonly string[] | null;
  /** The caller: the owner of the episodes and sessions it writes. */
  readonly owner: string | null;
  /** What the search, write and record modules need of this backend. */
  private readonly view: OrgView;

  constructor(
    readonly db: Database,
    readonly org: Org,
    readonly policy: AccessPolicy | null,
  ) {
    this.s = ident(org.schema);
    this.readable = policy?.readable ?? null;
    this.owner = policy?.userName ?? null;
    this.view = { db, org, s: this.s, readable: this.readable, policy, owner: this.owner };
  }

  /** Of these engram ids, the ones the caller may read (the order kept). */
  async readableIds(ids: readonly string[]): Promise<string[]> {
    return readableIds(this.view, ids);
  }

  // ---------------------------------------------------------------- reads

  async get(id: string): Promise<EngramDoc | null> {
    return visible(this.view, await getDoc(this.db, this.s, id));
  }

  async findByHash(hash: string): Promise<EngramDoc[]> {
    const params: unknown[] = [hash];
    const where = scopeClause(this.view, 'scope', params);
    const r = await this.db.query<{ doc: EngramDoc }>(
      `SELECT doc FROM ${this.s}.engrams WHERE content_hash = $1${where} ORDER BY seq`,
      params,
    );
    return r.rows.map((x) => x.doc);
  }

  async list(filter: ListFilter): Promise<EngramDoc[]> {
    const w = new SqlWhere();
    if (filter.scope) w.add('scope = ?', filter.scope);
    if (filter.domain) w.add("(domain = ? OR starts_with(domain, ? || '.'))", filter.domain);
    if (filter.type) w.add('type = ?', filter.type);
    if (filter.status) w.add('status = ?', filter.status);
    else if (!filter.includeRetired) w.raw("status <> 'retired'");
    if (filter.pinned !== undefined) w.add('pinned = ?', filter.pinned);
    if (filter.idPrefix) w.add('starts_with(id, ?)', filter.idPrefix);
    const scope = scopeClause(this.view, 'scope', w.params);
    const limit = filter.limit ? ` LIMIT ${w.param(filter.limit)}` : '';
    const r = await this.db.query<{ doc: EngramDoc }>(
      `SELECT doc FROM ${this.s}.engrams WHERE true${w.sql}${scope} ORDER BY doc->'temporal'->>'learned_at' DESC NULLS LAST, id DESC${limit}`,
      w.params,
    );
    return r.rows.map((x) => x.doc);
  }

  async page(f: EngramPageFilter, after: number | undefined, limit: number): Promise<{ items: EngramDoc[]; next: number | null }> {
    const w = new SqlWhere();
    if (f.scope) w.add('scope = ?', f.scope);
    if (f.status) w.add('status = ?', f.status);
    if (f.type) w.add('type = ?', f.type);
    if (f.domain) w.add("(domain = ? OR starts_with(domain, ? || '.'))", f.domain);
    if (f.content_hash) w.add('content_hash = ?', f.content_hash);
    if (after !== undefined) w.add('seq < ?', after);
    const scope = scopeClause(this.view, 'scope', w.params);
    const r = await this.db.query<{ doc: EngramDoc; seq: number }>(
      `SELECT doc, seq FROM ${this.s}.engrams WHERE true${w.sql}${scope} ORDER BY seq DESC LIMIT ${w.param(limit + 1)}`,
      w.params,
    );
    const more = r.rows.length > limit;
    const rows = r.rows.slice(0, limit);
    return { items: rows.map((x) => x.doc), next: more ? Number(rows[rows.length - 1]!.seq) : null };
  }

  async stats(): Promise<StoreStats> {
    const params: unknown[] = [];
    const scope = scopeClause(this.view, 'scope', params);
    const by = await this.db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${this.s}.engrams WHERE true${scope} GROUP BY status`,
      params,
    );
    const recordParams: unknown[] = [];
    const recordScope = scopeClause(this.view, 'scope', recordParams);
    const counts = await this.db.query<{ episodes: number; sessions: number; packs: number; injections: number }>(
      `SELECT (SELECT count(*)::int FROM ${this.s}.episodes WHERE true${recordScope}) AS episodes,
              (SELECT count(*)::int FROM ${this.s}.sessions WHERE true${recordScope}) AS sessions,
              (SELECT count(*)::int FROM ${this.s}.packs) AS packs,
              (SELECT count(*)::int FROM ${this.s}.engram_events WHERE action = 'injected') AS injections`,
      recordParams,
    );
    const byStatus = Object.fromEntries(by.rows.map((r) => [r.status, Number(r.n)]));
    const c = counts.rows[0]!;
    return {
      engrams: Object.values(byStatus).reduce((a, b) => a + b, 0),
      by_status: byStatus,
      episodes: Number(c.episodes),
      sessions: Number(c.sessions),
      packs: Number(c.packs),
      injection_events: Number(c.injections),
    };
  }

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any'): Promise<SearchHit[]> {
    return searchText(this.view, query, limit, mode);
  }

  /** 'pgvector' when this schema has the pgvector column (see migration 006), else 'array'. */
  async vectorPath(): Promise<'pgvector' | 'array'> {
    return vectorPath(this.view);
  }

  async searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
    return searchVector(this.view, vector, limit, model);
  }

  async embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
    return embedPending(this.view, embedder, onProgress);
  }

  async refresh(): Promise<void> {
    // Every read goes to the database: there is nothing to catch up with.
  }

  recordId(kind: 'EP' | 'SES', now: Date): string {
    return `${kind}-${this.org.idPrefix}-${idDay(now)}-${randomBytes(4).toString('hex')}`;
  }

  // ---------------------------------------------------------------- writes

  async write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
    return writeUnit(this.view, fn);
  }

  // ---------------------------------------------------------------- records

  async appendEpisodes(episodes: Episode[]): Promise<void> {
    return appendEpisodes(this.view, episodes);
  }

  async queryEpisodes(f: TimelineFilter): Promise<Episode[]> {
    return queryEpisodes(this.view, f);
  }

  async getEpisode(id: string): Promise<Episode | null> {
    return getEpisode(this.view, id);
  }

  async putSession(session: Session): Promise<void> {
    return putSession(this.view, session);
  }

  async getSession(id: string): Promise<Session | null> {
    return getSession(this.view, id);
  }

  async sessionsOf(owner: string, limit: number): Promise<Session[]> {
    return sessionsOf(this.view, owner, limit);
  }

  async appendEvents(events: EngramEvent[]): Promise<void> {
    return appendEvents(this.view, events);
  }

  async listEvents(f: EventFilter): Promise<EngramEvent[]> {
    return listEvents(this.view, f);
  }
}
