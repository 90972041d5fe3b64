import type { SearchHit, VectorHit } from '../../engine/backend.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { Embedder } from '../../engine/embed/embedder.js';
import type { Database } from '../contracts.js';
import { parseQuery } from '../../engine/search/fts-tokens.js';
import { postingsCacheOf } from '../data/postings-cache.js';
import { rankBm25, type RankedDoc, type RankInput } from '../../engine/search/bm25-rank.js';
import { scopeClause, type OrgView } from './pg-view.js';

// Search on the hub's PostgreSQL backend: BM25 over the postings (from the shared postings cache
// when it holds them, else from the database) scored as the caller's readable scopes alone
// would score, vector search (pgvector when the schema has it, else exact cosine here), and
// embedding what is pending.

const EMBED_BATCH = 64;
/** Per database and schema, fixed once its migrations ran: whether vectors have a pgvector column. */
const VECTOR_PATHS = new WeakMap<Database, Map<string, 'pgvector' | 'array'>>();

export async function searchText(view: OrgView, query: string, limit: number, mode: 'any' | 'all' = 'any'): Promise<SearchHit[]> {
  const parsed = parseQuery(query, mode);
  if (!parsed) return [];
  const terms = [...new Set(parsed.phrases.flat())];
  // Scores are those of an index holding only what the caller may read: N, the average length
  // and document frequencies count the readable scopes only (retired engrams included, as
  // FTS5 counts them); the arithmetic of bm25() happens here, then the top documents are
  // fetched (from memory when the postings were).
  const cached = await postingsCacheOf(view.db)?.current(view.org.schema);
  const top = rankBm25(parsed, cached ? cached.rankInput(terms, view.readable) : await postingsFromDatabase(view, terms), limit);
  if (top.length === 0) return [];
  const docs = cached
    ? new Map(top.map((t) => [t.id, cached.doc(t.id)!]))
    : new Map(
        (
          await view.db.query<{ id: string; doc: EngramDoc }>(`SELECT id, doc FROM ${view.s}.engrams WHERE id = ANY ($1::text[])`, [
            top.map((t) => t.id),
          ])
        ).rows.map((r) => [r.id, r.doc]),
      );
  return top.flatMap((t) => {
    const doc = docs.get(t.id);
    return doc ? [{ engram: doc, score: t.score }] : [];
  });
}

/** The postings of these terms in the scopes the caller may read, and those scopes' statistics. */
async function postingsFromDatabase(view: OrgView, terms: string[]): Promise<RankInput> {
  const params: unknown[] = [terms];
  const postingScope = scopeClause(view, 't.scope', params);
  const statScope = view.readable ? ` WHERE scope = ANY($${params.length}::text[])` : '';
  const r = await view.db.query<Posting>(
    `WITH s AS (SELECT coalesce(sum(n_rows), 0) AS n_rows, coalesce(sum(n_tokens), 0) AS n_tokens FROM ${view.s}.fts_scope_stats${statScope})
     SELECT t.term, t.engram_id, t.wtf, t.ntok, t.live, t.seq, s.n_rows, s.n_tokens
       FROM ${view.s}.engram_terms t, s WHERE t.term = ANY ($1::text[])${postingScope}`,
    params,
  );
  // The database filtered by scope already: one group per term.
  const docs = new Map<string, RankedDoc>();
  // term -> its one group -> document -> column-weighted count.
  const lists = new Map<string, Map<number, Map<RankedDoc, number>>>();
  for (const p of r.rows) {
    let doc = docs.get(p.engram_id);
    if (!doc)
      docs.set(p.engram_id, (doc = { id: p.engram_id, ord: docs.size, group: 0, ntok: Number(p.ntok), live: p.live, seq: Number(p.seq) }));
    let l = lists.get(p.term);
    if (!l) lists.set(p.term, (l = new Map([[0, new Map()]])));
    l.get(0)!.set(doc, Number(p.wtf));
  }
  const first = r.rows[0];
  return { lists, rows: Number(first?.n_rows ?? 0), tokens: Number(first?.n_tokens ?? 0), size: docs.size };
}

/** 'pgvector' when this schema has the pgvector column (see migration 006), else 'array'. */
export async function vectorPath(view: OrgView): Promise<'pgvector' | 'array'> {
  let paths = VECTOR_PATHS.get(view.db);
  if (!paths) VECTOR_PATHS.set(view.db, (paths = new Map()));
  let known = paths.get(view.org.schema);
  if (!known) {
    const r = await view.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'engram_vectors' AND column_name = 'embedding_v'`,
      [view.org.schema],
    );
    known = Number(r.rows[0]!.n) > 0 ? 'pgvector' : 'array';
    paths.set(view.org.schema, known);
  }
  return known;
}

export async function searchVector(view: OrgView, vector: Float32Array, limit: number, model: string): Promise<VectorHit[]> {
  const params: unknown[] = [model];
  const scope = scopeClause(view, 'e.scope', params);
  const live = `v.model = $1 AND v.content_hash = e.content_hash AND e.status <> 'retired'${scope}`;
  if ((await vectorPath(view)) === 'pgvector') {
    params.push(`[${Array.from(vector).join(',')}]`);
    const q = `$${params.length}::public.vector`;
    params.push(limit);
    const r = await view.db.query<{ doc: EngramDoc; cosine: number }>(
      `SELECT e.doc, 1 - (v.embedding_v OPERATOR(public.<=>) ${q}) AS cosine
         FROM ${view.s}.engram_vectors v JOIN ${view.s}.engrams e ON e.id = v.engram_id
        WHERE ${live} ORDER BY v.embedding_v OPERATOR(public.<=>) ${q} LIMIT $${params.length}`,
      params,
    );
    return r.rows.map((row) => ({ engram: row.doc, cosine: Number(row.cosine) }));
  }
  // Exhaustive cosine in the hub process: correct on any PostgreSQL.
  const r = await view.db.query<{ doc: EngramDoc; embedding: number[] }>(
    `SELECT e.doc, v.embedding FROM ${view.s}.engram_vectors v JOIN ${view.s}.engrams e ON e.id = v.engram_id WHERE ${live}`,
    params,
  );
  const hits = r.rows.map((row) => ({ engram: row.doc, cosine: cosine(vector, row.embedding) }));
  hits.sort((a, b) => b.cosine - a.cosine);
  return hits.slice(0, limit);
}

export async function embedPending(view: OrgView, embedder: Embedder, onProgress?: (done: number, total: number) => void): Promise<number> {
  const pendingSql = `FROM ${view.s}.engrams e LEFT JOIN ${view.s}.engram_vectors v ON v.engram_id = e.id
    WHERE e.status <> 'retired' AND (v.engram_id IS NULL OR v.model <> $1 OR v.content_hash <> e.content_hash)`;
  const total = Number((await view.db.query<{ n: number }>(`SELECT count(*)::int AS n ${pendingSql}`, [embedder.model])).rows[0]?.n ?? 0);
  let done = 0;
  while (done < total) {
    const batch = (
      await view.db.query<{ id: string; statement: string; content_hash: string }>(
        `SELECT e.id, e.doc->>'statement' AS statement, e.content_hash ${pendingSql} ORDER BY e.seq LIMIT ${EMBED_BATCH}`,
        [embedder.model],
      )
    ).rows;
    if (batch.length === 0) break;
    const vectors = await embedder.embedPassages(batch.map((b) => b.statement));
    // Only if the statement is still the one embedded: an edit meanwhile leaves it pending.
    const pgv = (await vectorPath(view)) === 'pgvector';
    await view.db.query(
      `INSERT INTO ${view.s}.engram_vectors (engram_id, model, content_hash, embedding${pgv ? ', embedding_v' : ''})
       SELECT x.id, $1, x.hash, x.emb::real[]${pgv ? ', x.emb::real[]::public.vector' : ''} FROM jsonb_to_recordset($2::jsonb) AS x(id text, hash text, emb float8[])
         JOIN ${view.s}.engrams e ON e.id = x.id AND e.content_hash = x.hash
       ON CONFLICT (engram_id) DO UPDATE SET model = excluded.model, content_hash = excluded.content_hash, embedding = excluded.embedding${pgv ? ', embedding_v = excluded.embedding_v' : ''}`,
      [embedder.model, JSON.stringify(batch.map((b, i) => ({ id: b.id, hash: b.content_hash, emb: Array.from(vectors[i]!) })))],
    );
    done += batch.length;
    onProgress?.(Math.min(done, total), total);
  }
  return done;
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
