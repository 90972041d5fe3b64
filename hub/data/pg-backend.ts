import { randomBytes } from 'node:crypto';
import type { EngramWriter, EventNote, ListFilter, SearchHit, StoreStats, VectorHit } from '../../engine/backend.js';
import type { EngramDoc } from '../../engine/model/engram-schema.js';
import type { EngramEvent, Episode, EventFilter, Session, TimelineFilter } from '../../engine/model/records.js';
import type { Embedder } from '../../engine/embed/embedder.js';
import { contentHash } from '../../engine/model/content-hash.js';
import { changeEvent } from '../../engine/model/change-event.js';
import { formatId, idDay, idStem } from '../../engine/model/ids.js';
import { validateEngram } from '../../engine/model/validate-engram.js';
import { queryTerms } from '../../engine/search/fts-query.js';
import { invalid } from '../../engine/errors.js';
import type { Database, EngramPageFilter, Org, OrgBackend, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from './sql.js';
import { SqlWhere } from './sql-where.js';
import { documentTerms, parseQuery } from './fts-tokens.js';
import { postingsCacheOf } from './postings-cache.js';
import { rankBm25, type RankedDoc, type RankInput, type TermPostings } from './bm25-rank.js';
import type { Policy } from '../access/policy.js';
import { emitEvents, outboxSql, type WebhookEvent } from '../webhooks/webhook-outbox.js';

// The engine's backend on one organization's PostgreSQL schema. The engine's operations (learn,
// recall, inject, forget, ...) run on it unchanged. Nothing that matters is kept in memory:
// several hub processes share the database (BM25 postings a process holds in memory are checked
// against the database's revision on each use: postings-cache.ts). Writes of one organization are
// serialized by a transaction-scoped advisory lock (content-hash dedup and id allocation stay race-free across
// processes).

/**
 * The caller's policy (hub/access/policy.ts): every read sees only what it may read (a hidden
 * engram looks exactly like a missing one) and every write is checked by it. Without one, the
 * backend is the hub's own (migrations, benchmarks, the webhook worker): it reads and writes all.
 */
export function openOrgBackend(db: Database, org: Org, policy: Policy | null): PgBackend {
  return new PgBackend(db, org, policy);
}

const EMBED_BATCH = 64;
/** Per database and schema, fixed once its migrations ran: whether vectors have a pgvector column. */
const VECTOR_PATHS = new WeakMap<Database, Map<string, 'pgvector' | 'array'>>();

export class PgBackend implements OrgBackend {
  /** The hub never stores what looks like a secret: learn and pack install refuse it. */
  readonly secretPolicy = 'refuse' as const;
  private readonly s: string;
  /** Scopes the caller may read; null: all. */
  readonly readable: readonly string[] | null;
  /** The caller: the owner of the episodes and sessions it writes. */
  readonly owner: string | null;

  constructor(
    readonly db: Database,
    readonly org: Org,
    readonly policy: Policy | null,
  ) {
    this.s = ident(org.schema);
    this.readable = policy?.readable ?? null;
    this.owner = policy?.userName ?? null;
  }

  /** Where a record without a scope lives: its owner's own scope (the organization's, written by no one). */
  private recordScope(scope: string | undefined): string {
    return scope ?? (this.owner ? `user:${this.owner}` : `org:${this.org.slug}`);
  }

  /** Of these engram ids, the ones the caller may read (the order kept). */
  async readableIds(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0 || !this.readable) return [...ids];
    const params: unknown[] = [[...ids]];
    const where = this.scopeClause('scope', params);
    const seen = new Set((await this.db.query<{ id: string }>(`SELECT id FROM ${this.s}.engrams WHERE id = ANY($1::text[])${where}`, params)).rows.map((r) => r.id));
    return ids.filter((id) => seen.has(id));
  }

  /** `AND <col> = ANY($n)` when reads are restricted, with its parameter appended to `params`. */
  private scopeClause(col: string, params: unknown[]): string {
    if (!this.readable) return '';
    params.push([...this.readable]);
    return ` AND ${col} = ANY($${params.length}::text[])`;
  }

  private visible(e: EngramDoc | null): EngramDoc | null {
    return e && (!this.policy || this.policy.mayRead(e.scope)) ? e : null;
  }

  // ---------------------------------------------------------------- reads

  async get(id: string): Promise<EngramDoc | null> {
    return this.visible(await getDoc(this.db, this.s, id));
  }

  async findByHash(hash: string): Promise<EngramDoc[]> {
    const params: unknown[] = [hash];
    const where = this.scopeClause('scope', params);
    const r = await this.db.query<{ doc: EngramDoc }>(`SELECT doc FROM ${this.s}.engrams WHERE content_hash = $1${where} ORDER BY seq`, params);
    return r.rows.map((x) => x.doc);
  }

  async searchText(query: string, limit: number, mode: 'any' | 'all' = 'any'): Promise<SearchHit[]> {
    const parsed = parseQuery(query, mode);
    if (!parsed) return [];
    const terms = [...new Set(parsed.phrases.flat())];
    // Scores are those of an index holding only what the caller may read: N, the average length
    // and document frequencies count the readable scopes only (retired engrams included, as
    // FTS5 counts them); the arithmetic of bm25() happens here, then the top documents are
    // fetched (from memory when the postings were).
    const cached = await postingsCacheOf(this.db)?.current(this.org.schema);
    const top = rankBm25(parsed, cached ? cached.rankInput(terms, this.readable) : await this.postingsFromDatabase(terms), limit);
    if (top.length === 0) return [];
    const docs = cached
      ? new Map(top.map((t) => [t.id, JSON.parse(cached.json(t.id)!) as EngramDoc]))
      : new Map(
          (await this.db.query<{ id: string; doc: EngramDoc }>(`SELECT id, doc FROM ${this.s}.engrams WHERE id = ANY ($1::text[])`, [top.map((t) => t.id)])).rows.map((r) => [r.id, r.doc]),
        );
    return top.flatMap((t) => {
      const doc = docs.get(t.id);
      return doc ? [{ engram: doc, score: t.score }] : [];
    });
  }

  /** The postings of these terms in the scopes the caller may read, and those scopes' statistics. */
  private async postingsFromDatabase(terms: string[]): Promise<RankInput> {
    const params: unknown[] = [terms];
    const postingScope = this.scopeClause('t.scope', params);
    const statScope = this.readable ? ` WHERE scope = ANY($${params.length}::text[])` : '';
    const r = await this.db.query<Posting>(
      `WITH s AS (SELECT coalesce(sum(n_rows), 0) AS n_rows, coalesce(sum(n_tokens), 0) AS n_tokens FROM ${this.s}.fts_scope_stats${statScope})
       SELECT t.term, t.engram_id, t.wtf, t.ntok, t.live, t.seq, s.n_rows, s.n_tokens
         FROM ${this.s}.engram_terms t, s WHERE t.term = ANY ($1::text[])${postingScope}`,
      params,
    );
    // The database filtered by scope already: one group per term.
    const docs = new Map<string, RankedDoc>();
    const lists = new Map<string, TermPostings>();
    for (const p of r.rows) {
      let doc = docs.get(p.engram_id);
      if (!doc) docs.set(p.engram_id, (doc = { id: p.engram_id, ord: docs.size, group: 0, ntok: Number(p.ntok), live: p.live, seq: Number(p.seq) }));
      let l = lists.get(p.term);
      if (!l) lists.set(p.term, (l = new Map([[0, new Map()]])));
      l.get(0)!.set(doc, Number(p.wtf));
    }
    const first = r.rows[0];
    return { lists, rows: Number(first?.n_rows ?? 0), tokens: Number(first?.n_tokens ?? 0), size: docs.size };
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
    const scope = this.scopeClause('scope', w.params);
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
    const scope = this.scopeClause('scope', w.params);
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
    const scope = this.scopeClause('scope', params);
    const by = await this.db.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${this.s}.engrams WHERE true${scope} GROUP BY status`,
      params,
    );
    const recordParams: unknown[] = [];
    const recordScope = this.scopeClause('scope', recordParams);
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

  /** 'pgvector' when this schema has the pgvector column (see migration 006), else 'array'. */
  async vectorPath(): Promise<'pgvector' | 'array'> {
    let paths = VECTOR_PATHS.get(this.db);
    if (!paths) VECTOR_PATHS.set(this.db, (paths = new Map()));
    let known = paths.get(this.org.schema);
    if (!known) {
      const r = await this.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'engram_vectors' AND column_name = 'embedding_v'`,
        [this.org.schema],
      );
      known = Number(r.rows[0]!.n) > 0 ? 'pgvector' : 'array';
      paths.set(this.org.schema, known);
    }
    return known;
  }

  async searchVector(vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
    const params: unknown[] = [model];
    const scope = this.scopeClause('e.scope', params);
    const live = `v.model = $1 AND v.content_hash = e.content_hash AND e.status <> 'retired'${scope}`;
    if ((await this.vectorPath()) === 'pgvector') {
      params.push(`[${Array.from(vector).join(',')}]`);
      const q = `$${params.length}::public.vector`;
      params.push(limit);
      const r = await this.db.query<{ doc: EngramDoc; cosine: number }>(
        `SELECT e.doc, 1 - (v.embedding_v OPERATOR(public.<=>) ${q}) AS cosine
           FROM ${this.s}.engram_vectors v JOIN ${this.s}.engrams e ON e.id = v.engram_id
          WHERE ${live} ORDER BY v.embedding_v OPERATOR(public.<=>) ${q} LIMIT $${params.length}`,
        params,
      );
      return r.rows.map((row) => ({ engram: row.doc, cosine: Number(row.cosine) }));
    }
    // Exhaustive cosine in the hub process: correct on any PostgreSQL.
    const r = await this.db.query<{ doc: EngramDoc; embedding: number[] }>(
      `SELECT e.doc, v.embedding FROM ${this.s}.engram_vectors v JOIN ${this.s}.engrams e ON e.id = v.engram_id WHERE ${live}`,
      params,
    );
    const hits = r.rows.map((row) => ({ engram: row.doc, cosine: cosine(vector, row.embedding) }));
    hits.sort((a, b) => b.cosine - a.cosine);
    return hits.slice(0, limit);
  }

  async embedPending(embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
    const pendingSql = `FROM ${this.s}.engrams e LEFT JOIN ${this.s}.engram_vectors v ON v.engram_id = e.id
      WHERE e.status <> 'retired' AND (v.engram_id IS NULL OR v.model <> $1 OR v.content_hash <> e.content_hash)`;
    const total = Number((await this.db.query<{ n: number }>(`SELECT count(*)::int AS n ${pendingSql}`, [embedder.model])).rows[0]?.n ?? 0);
    let done = 0;
    while (done < total) {
      const batch = (await this.db.query<{ id: string; statement: string; content_hash: string }>(
        `SELECT e.id, e.doc->>'statement' AS statement, e.content_hash ${pendingSql} ORDER BY e.seq LIMIT ${EMBED_BATCH}`,
        [embedder.model],
      )).rows;
      if (batch.length === 0) break;
      const vectors = await embedder.embedPassages(batch.map((b) => b.statement));
      // Only if the statement is still the one embedded: an edit meanwhile leaves it pending.
      const pgv = (await this.vectorPath()) === 'pgvector';
      await this.db.query(
        `INSERT INTO ${this.s}.engram_vectors (engram_id, model, content_hash, embedding${pgv ? ', embedding_v' : ''})
         SELECT x.id, $1, x.hash, x.emb::real[]${pgv ? ', x.emb::real[]::public.vector' : ''} FROM jsonb_to_recordset($2::jsonb) AS x(id text, hash text, emb float8[])
           JOIN ${this.s}.engrams e ON e.id = x.id AND e.content_hash = x.hash
         ON CONFLICT (engram_id) DO UPDATE SET model = excluded.model, content_hash = excluded.content_hash, embedding = excluded.embedding${pgv ? ', embedding_v = excluded.embedding_v' : ''}`,
        [embedder.model, JSON.stringify(batch.map((b, i) => ({ id: b.id, hash: b.content_hash, emb: Array.from(vectors[i]!) })))],
      );
      done += batch.length;
      onProgress?.(Math.min(done, total), total);
    }
    return done;
  }

  async refresh(): Promise<void> {
    // Every read goes to the database: there is nothing to catch up with.
  }

  recordId(kind: 'EP' | 'SES', now: Date): string {
    return `${kind}-${this.org.idPrefix}-${idDay(now)}-${randomBytes(4).toString('hex')}`;
  }

  // ---------------------------------------------------------------- writes

  async write<T>(fn: (tx: EngramWriter) => Promise<T>): Promise<T> {
    return this.db.transaction(async (q) => {
      // The organization's write lock, taken before the unit's first query and held to the end
      // of the transaction (learn's first query takes it and reads in one round trip). The
      // shorter the span from lock to commit, the more writes an organization takes a second.
      let locked = false;
      const lock = async (): Promise<void> => {
        if (locked) return;
        await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc_hub:write:${this.org.schema}`]);
        locked = true;
      };
      // Ids this unit allocated and has not written yet: no engram can have them, so their
      // first put skips reading a prior version (and fails rather than overwrite one).
      const fresh = new Set<string>();
      const tx: EngramWriter = {
        get: async (id) => {
          await lock();
          return this.visible(await getDoc(q, this.s, id));
        },
        // Takes the lock (again, if held: it is re-entrant) and reads after it, in one round trip.
        findByHash: async (hash) => {
          const rows = await q.query<{ doc: EngramDoc }>(`SELECT doc FROM ${CONTROL_SCHEMA}.engrams_by_hash_locked($1, $2, $3) AS doc`, [
            this.org.schema,
            hash,
            this.readable ? [...this.readable] : null,
          ]);
          locked = true;
          return rows.rows.map((r) => r.doc);
        },
        allocateId: async (kind, now) => {
          await lock();
          const day = idDay(now);
          const stem = idStem(kind, this.org.idPrefix, day);
          const r = await q.query<{ last: number }>(
            `INSERT INTO ${this.s}.id_counters (stem, last) VALUES ($1, 1)
             ON CONFLICT (stem) DO UPDATE SET last = ${this.s}.id_counters.last + 1 RETURNING last`,
            [stem],
          );
          const id = formatId(kind, this.org.idPrefix, day, Number(r.rows[0]!.last));
          fresh.add(id);
          return id;
        },
        put: async (engram, note) => {
          await lock();
          await this.putEngram(q, engram, note, fresh.delete(engram.id));
        },
      };
      return fn(tx);
    });
  }

  /**
   * Writes an engram, its postings, its scope statistics, its change event and its webhook
   * events in one statement (one round trip while the organization's write lock is held).
   */
  private async putEngram(q: Queryable, engram: EngramDoc, note: EventNote | undefined, fresh: boolean): Promise<void> {
    const check = validateEngram(engram);
    if (!check.ok) throw invalid(`engram ${engram.id} is invalid`, check.errors);
    const prior = fresh ? undefined : (await q.query<{ doc: EngramDoc; ntok: number }>(`SELECT doc, ntok FROM ${this.s}.engrams WHERE id = $1`, [engram.id])).rows[0];
    const before = prior?.doc ?? null;
    this.policy?.engramWrite(before, engram);
    const { terms, ntok } = documentTerms(engram);
    const hash = engram.content_hash ?? contentHash(engram.statement);
    // The collection statistics of the scope it left and the one it is in, as deltas.
    const stats = new Map<string, { rows: number; tokens: number }>([[engram.scope, { rows: 1, tokens: ntok }]]);
    if (before) {
      const left = stats.get(before.scope) ?? { rows: 0, tokens: 0 };
      stats.set(before.scope, { rows: left.rows - 1, tokens: left.tokens - Number(prior!.ntok) });
    }
    const event = changeEvent(before, engram, note);
    const params: unknown[] = [
      engram.id, engram.scope, engram.status, engram.type, engram.domain ?? null, hash, engram.pinned === true, ntok, JSON.stringify(engram),
      [...terms.keys()], [...terms.values()],
      [...stats.keys()], [...stats.values()].map((d) => d.rows), [...stats.values()].map((d) => d.tokens),
      JSON.stringify(event ? [event] : []),
    ];
    const outbox = outboxSql(this.org, [{ type: lifecycleEvent(before, engram), data: engram }], params);
    const s = this.s;
    const upsert = fresh
      ? ''
      : `ON CONFLICT (id) DO UPDATE SET scope = excluded.scope, status = excluded.status, type = excluded.type,
           domain = excluded.domain, content_hash = excluded.content_hash, pinned = excluded.pinned, ntok = excluded.ntok,
           doc = excluded.doc, updated_at = now(), rev = DEFAULT`;
    // The terms it no longer has go; the others are written over (disjoint rows: one statement may do both).
    await q.query(
      `WITH written AS (
         INSERT INTO ${s}.engrams (id, scope, status, type, domain, content_hash, pinned, ntok, doc, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, now()) ${upsert}
         RETURNING id, seq, ntok, status, scope),
       gone AS (DELETE FROM ${s}.engram_terms WHERE engram_id = $1 AND term <> ALL ($10::text[])),
       postings AS (
         INSERT INTO ${s}.engram_terms (term, engram_id, wtf, ntok, live, scope, seq)
         SELECT x.t, e.id, x.w, e.ntok, e.status <> 'retired', e.scope, e.seq FROM unnest($10::text[], $11::float8[]) AS x(t, w), written e
         ON CONFLICT (term, engram_id) DO UPDATE SET wtf = excluded.wtf, ntok = excluded.ntok, live = excluded.live, scope = excluded.scope, seq = excluded.seq),
       stats AS (
         INSERT INTO ${s}.fts_scope_stats AS f (scope, n_rows, n_tokens) SELECT * FROM unnest($12::text[], $13::bigint[], $14::bigint[])
         ON CONFLICT (scope) DO UPDATE SET n_rows = f.n_rows + excluded.n_rows, n_tokens = f.n_tokens + excluded.n_tokens),
       events AS (
         INSERT INTO ${s}.engram_events (at, action, engram_id, session, doc)
         SELECT (x.doc->>'at')::timestamptz, x.doc->>'action', x.doc->>'engram_id', x.doc->>'session', x.doc
           FROM jsonb_array_elements($15::jsonb) AS x(doc)),
       ${outbox.cte}
       ${outbox.select}`,
      params,
    );
  }

  // ---------------------------------------------------------------- records

  async appendEpisodes(episodes: Episode[]): Promise<void> {
    if (episodes.length === 0) return;
    // The author is the caller, whatever the episode says; its scope one the caller writes.
    const owned = episodes.map((e) => ({ ...e, ...(this.owner ? { owner: this.owner } : {}), scope: this.recordScope(e.scope) }));
    if (this.policy) for (const e of owned) await this.checkEpisode(this.policy, e);
    await this.db.query(
      `INSERT INTO ${this.s}.episodes (id, at, agent, channel, session, summary, owner, scope, doc)
       SELECT x.doc->>'id', (x.doc->>'at')::timestamptz, x.doc->>'agent', x.doc->>'channel', x.doc->>'session', x.doc->>'summary',
              x.doc->>'owner', x.doc->>'scope', x.doc
         FROM jsonb_array_elements($1::jsonb) AS x(doc)
       ON CONFLICT (id) DO NOTHING`,
      [JSON.stringify(owned)],
    );
  }

  /** An episode goes where its author writes, and names only a session and engrams its author reads. */
  private async checkEpisode(policy: Policy, e: Episode): Promise<void> {
    policy.episodeWrite(e.scope!);
    if (e.session && !(await this.getSession(e.session))) throw invalid(`session: no session ${e.session}`, [`session: no session ${e.session}`]);
    const ids = e.engram_ids ?? [];
    const readable = new Set(await this.readableIds(ids));
    const unknown = ids.filter((id) => !readable.has(id));
    if (unknown.length) throw invalid(`engram_ids: no engram ${unknown.join(', ')}`, unknown.map((id) => `engram_ids: no engram ${id}`));
  }

  /** An episode or session as its reader may see it: only the engram ids it may read. */
  private async forReader<T extends { engram_ids?: string[] }>(record: T): Promise<T> {
    if (!record.engram_ids?.length) return record;
    return { ...record, engram_ids: await this.readableIds(record.engram_ids) };
  }

  async queryEpisodes(f: TimelineFilter): Promise<Episode[]> {
    const w = new SqlWhere();
    let rank = '';
    if (f.query) {
      const terms = queryTerms(f.query);
      if (terms.length === 0) return [];
      // PostgreSQL's English stemming over the summaries, any of the query's terms.
      const tsq = `websearch_to_tsquery('english', ${w.param(terms.map((t) => t.replace(/[^\p{L}\p{N}\s]/gu, ' ').trim()).filter(Boolean).join(' or '))})`;
      w.raw(`to_tsvector('english', summary) @@ ${tsq}`);
      rank = `ts_rank(to_tsvector('english', summary), ${tsq}) DESC, `;
    }
    if (f.agent !== undefined) w.add('agent = ?', f.agent);
    if (f.channel !== undefined) w.add('channel = ?', f.channel);
    if (f.session !== undefined) w.add('session = ?', f.session);
    if (f.from) w.add('at >= ?::timestamptz', f.from);
    if (f.to) w.add('at <= ?::timestamptz', f.to);
    const scope = this.scopeClause('scope', w.params);
    const r = await this.db.query<{ doc: Episode }>(
      `SELECT doc FROM ${this.s}.episodes WHERE true${w.sql}${scope} ORDER BY ${rank}at DESC, id DESC LIMIT ${w.param(f.limit ?? 20)}`,
      w.params,
    );
    return Promise.all(r.rows.map((x) => this.forReader(x.doc)));
  }

  async getEpisode(id: string): Promise<Episode | null> {
    const params: unknown[] = [id];
    const scope = this.scopeClause('scope', params);
    const doc = (await this.db.query<{ doc: Episode }>(`SELECT doc FROM ${this.s}.episodes WHERE id = $1${scope}`, params)).rows[0]?.doc;
    return doc ? this.forReader(doc) : null;
  }

  async putSession(session: Session): Promise<void> {
    const stored = (await this.db.query<{ doc: Session }>(`SELECT doc FROM ${this.s}.sessions WHERE id = $1`, [session.id])).rows[0]?.doc ?? null;
    // A new session is the caller's; a stored one keeps its owner (and only that owner changes it).
    const owner = stored ? stored.owner : (this.owner ?? session.owner);
    // A reader sees only the engram ids it may read: keep the stored ones it could not see.
    const engram_ids = [...new Set([...(stored?.engram_ids ?? []), ...session.engram_ids])];
    const owned: Session = { ...session, engram_ids, ...(owner ? { owner } : {}), scope: this.recordScope(session.scope ?? stored?.scope) };
    this.policy?.sessionWrite(stored, owned);
    await this.db.transaction(async (q) => {
      const ended = await q.query<{ was_open: boolean | null }>(
        `WITH prior AS (SELECT doc->>'ended_at' IS NULL AS open FROM ${this.s}.sessions WHERE id = $1)
         INSERT INTO ${this.s}.sessions (id, owner, scope, doc, updated_at) VALUES ($1, $2, $3, $4::jsonb, now())
         ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, scope = excluded.scope, updated_at = now()
         RETURNING (SELECT open FROM prior) AS was_open`,
        [owned.id, owned.owner ?? null, owned.scope, JSON.stringify(owned)],
      );
      if (owned.ended_at && ended.rows[0]?.was_open !== false) await emitEvents(q, this.org, [{ type: 'session.ended', data: owned }]);
    });
  }

  async getSession(id: string): Promise<Session | null> {
    const params: unknown[] = [id];
    const scope = this.scopeClause('scope', params);
    const doc = (await this.db.query<{ doc: Session }>(`SELECT doc FROM ${this.s}.sessions WHERE id = $1${scope}`, params)).rows[0]?.doc;
    return doc ? this.forReader(doc) : null;
  }

  async sessionsOf(owner: string, limit: number): Promise<Session[]> {
    const params: unknown[] = [owner, limit];
    const scope = this.scopeClause('scope', params);
    const rows = await this.db.query<{ doc: Session }>(
      `SELECT doc FROM ${this.s}.sessions WHERE owner = $1${scope} ORDER BY doc->>'started_at' DESC, id DESC LIMIT $2`,
      params,
    );
    return Promise.all(rows.rows.map((r) => this.forReader(r.doc)));
  }

  async appendEvents(events: EngramEvent[]): Promise<void> {
    // An injection receipt holds the caller's task: it is theirs (see Policy.eventVisible).
    await insertEvents(this.db, this.s, this.owner ? events.map((e) => (e.action === 'injected' ? { ...e, owner: this.owner! } : e)) : events);
  }

  async listEvents(f: EventFilter): Promise<EngramEvent[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (f.engram_id) {
      params.push(f.engram_id);
      // Injections name their engrams inside the document.
      where.push(`(engram_id = $${params.length} OR (action = 'injected' AND doc->'engram_ids' ? $${params.length}))`);
    }
    if (f.session) {
      params.push(f.session);
      where.push(`session = $${params.length}`);
    }
    if (f.action) {
      params.push(f.action);
      where.push(`action = $${params.length}`);
    }
    if (this.policy) {
      // What the policy shows (Policy.eventVisible), as SQL so that `limit` counts only those.
      params.push([...this.policy.readable], this.policy.userName);
      const scopes = `$${params.length - 1}::text[]`;
      where.push(`(CASE WHEN action = 'injected'
          THEN doc->>'owner' = $${params.length} OR session IN (SELECT id FROM ${this.s}.sessions WHERE scope = ANY (${scopes}))
          ELSE engram_id IN (SELECT id FROM ${this.s}.engrams WHERE scope = ANY (${scopes})) END)`);
    }
    const limit = f.limit ? `LIMIT ${Math.floor(f.limit)}` : '';
    const r = await this.db.query<{ doc: EngramEvent }>(
      `SELECT doc FROM (SELECT doc, at, seq FROM ${this.s}.engram_events WHERE true${where.map((w) => ' AND ' + w).join('')}
        ORDER BY at DESC, seq DESC ${limit}) x ORDER BY at, seq`,
      params,
    );
    if (!this.policy) return r.rows.map((x) => x.doc);
    // An injection shown still names only the engrams the caller may read.
    return Promise.all(
      r.rows.map(async ({ doc }) => {
        const { owner: _owner, ...event } = doc as EngramEvent & { owner?: string };
        return event.engram_ids ? { ...event, engram_ids: await this.readableIds(event.engram_ids) } : event;
      }),
    );
  }
}

interface Posting {
  term: string;
  engram_id: string;
  wtf: number;
  ntok: number;
  live: boolean;
  seq: number;
  n_rows: number;
  n_tokens: number;
}

/** The webhook event of an engram write: a new one, one retired by it, or any other change. */
function lifecycleEvent(before: EngramDoc | null, after: EngramDoc): WebhookEvent {
  if (!before) return 'engram.created';
  return after.status === 'retired' && before.status !== 'retired' ? 'engram.retired' : 'engram.updated';
}

async function getDoc(q: Queryable, s: string, id: string): Promise<EngramDoc | null> {
  return (await q.query<{ doc: EngramDoc }>(`SELECT doc FROM ${s}.engrams WHERE id = $1`, [id])).rows[0]?.doc ?? null;
}

async function insertEvents(q: Queryable, s: string, events: EngramEvent[]): Promise<void> {
  if (events.length === 0) return;
  await q.query(
    `INSERT INTO ${s}.engram_events (at, action, engram_id, session, doc)
     SELECT (x.doc->>'at')::timestamptz, x.doc->>'action', x.doc->>'engram_id', x.doc->>'session', x.doc
       FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(doc, n) ORDER BY n`,
    [JSON.stringify(events)],
  );
}

function cosine(a: Float32Array, b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i] ?? 0;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
