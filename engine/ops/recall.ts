import type { EngramStore, SearchIndex } from '../backend.js';
import { normalizeStatement } from '../model/content-hash.js';
import type { EngramDoc } from '../model/engram-types.js';
import type { EmbedderState } from '../embed/embedder.js';
import { activationStrength } from '../model/activation.js';
import { round, byCodeUnit } from '../text.js';
import type { RerankReport, RerankSetting } from '../rerank/reranker.js';
import { SPREAD_SOURCES, spreadActivation, type Via } from './spreading.js';
import { LEAD_TERM_FACTOR, leadTermMatcher } from '../search/lead-term.js';

export const DEFAULT_RECALL_LIMIT = 10;
/** Reciprocal rank fusion constant (Cormack et al.): damps the head of each ranking. */
export const RRF_K = 60;
/** How long recall waits for its question to reach the hub before it ranks locally. */
const SEND_WAIT_MS = 50;

export interface RecallHit {
  engram: EngramDoc;
  /** Final score: relevance (best = 1; BM25 score alone, else reciprocal rank fusion; lifted when the statement opens with a query term) shaped by the lifecycle. */
  score: number;
  /** Which rankings found it; `association` alone: no ranking did, a hit's associations brought it (see `via`). */
  found_by: Array<'bm25' | 'vector' | 'association'>;
  bm25?: { rank: number; score: number };
  vector?: { rank: number; cosine: number };
  /** Candidates are returned but marked: they are not yet trusted. */
  candidate: boolean;
  /** The hit that spread activation to this one (its score includes the push), and the link's type and strength. */
  via?: Via;
  /** The cross-encoder's score, when a reranker reordered the head. */
  rerank_score?: number;
  /** With a team source: where it was found (the same content found in both is shown once); `outbox`: a team write still queued for the hub. */
  source?: 'local' | 'hub' | 'both' | 'outbox';
}

/** The hub's ranking, merged into recall when the project names one (engine/remote/team-recall.ts). */
export interface TeamSource {
  url: string;
  /** Never throws: a hub that fails or is late answers with its state and no hits. `onSent`: called once the hub has the question. */
  search(query: string, limit: number, onSent?: () => void): Promise<TeamAnswer>;
}

export interface TeamAnswer {
  state: 'ok' | 'cached' | 'unreachable' | 'refused';
  detail?: string;
  hits: RecallHit[];
}

/** Which sources answered a recall that had a team source. */
export interface RecallSources {
  local: 'ok';
  hub: { url: string; state: TeamAnswer['state']; detail?: string; hits: number };
}

export type VectorLeg = 'ran' | 'skipped' | 'unavailable';

export interface RecallResult {
  query: string;
  legs: { bm25: 'ran'; vector: VectorLeg; vector_reason?: string; model?: string };
  hits: RecallHit[];
  /** Present when a reranker was asked for: whether it ran, and if not, why. */
  reranker?: RerankReport;
  /** Present with a team source. */
  sources?: RecallSources;
}

export interface RecallOptions {
  limit?: number;
  /** BM25 only. */
  fast?: boolean;
  /** The dense leg; absent means it is skipped, `unavailable` means it was wanted and could not run. */
  embedder?: EmbedderState;
  /** Rerank the head of the ranking (never with `fast`). */
  reranker?: RerankSetting;
  now?: Date;
  /** Also ask the hub, and merge its ranking with the local one (by reciprocal rank). */
  team?: TeamSource;
  /** BM25 with the query's rarest terms only (TextSearchOptions): for a statement's neighbours. */
  rarestTermRows?: number;
}

/**
 * Hybrid recall: BM25 and vector rankings fused by reciprocal rank fusion, then shaped by the
 * lifecycle (activation with decay, feedback, pinning, dormancy); the top hits then spread
 * activation to their associates (spreading.ts). Retired engrams never return.
 */
export async function recall(backend: EngramStore & SearchIndex, query: string, opts: RecallOptions = {}): Promise<RecallResult> {
  if (!opts.team) return localRecall(backend, query, opts);
  const limit = opts.limit ?? DEFAULT_RECALL_LIMIT;
  let sent!: () => void;
  const onWire = new Promise<void>((resolve) => (sent = resolve));
  const remote = opts.team.search(query, limit, sent);
  // Local ranking holds the thread from start to end, so a request still being made would only
  // leave once it is done: the hub's time would add to ours. Wait for the request to go (or an
  // answer from the cache, or a short while for a hub slow to connect), then rank while it works.
  await Promise.race([onWire, remote, new Promise((resolve) => setTimeout(resolve, SEND_WAIT_MS).unref())]);
  const local = await localRecall(backend, query, opts);
  const answer = await remote;
  return {
    ...local,
    hits: mergeRankings(local.hits, answer.hits, limit),
    sources: {
      local: 'ok',
      hub: { url: opts.team.url, state: answer.state, ...(answer.detail ? { detail: answer.detail } : {}), hits: answer.hits.length },
    },
  };
}

/**
 * The local and the hub's rankings as one, by reciprocal rank fusion; the same content found in
 * both (the same statement once normalized) is one hit, kept as the local engram, marked `both`.
 */
export function mergeRankings(local: RecallHit[], hub: RecallHit[], limit: number): RecallHit[] {
  const merged = new Map<string, { hit: RecallHit; fused: number }>();
  // What the content hash hashes: equal exactly when the hashes are, without hashing each hub hit (its answer carries no hash).
  const keyOf = (h: RecallHit) => normalizeStatement(h.engram.statement);
  local.forEach((h, i) => merged.set(keyOf(h), { hit: { ...h, source: 'local' }, fused: 1 / (RRF_K + i + 1) }));
  hub.forEach((h, i) => {
    const key = keyOf(h);
    const seen = merged.get(key);
    if (seen) {
      seen.fused += 1 / (RRF_K + i + 1);
      seen.hit = { ...seen.hit, source: 'both', score: Math.max(seen.hit.score, h.score) };
    } else {
      merged.set(key, { hit: { ...h, source: h.source ?? 'hub' }, fused: 1 / (RRF_K + i + 1) });
    }
  });
  return [...merged.values()]
    .sort((a, b) => b.fused - a.fused || b.hit.score - a.hit.score)
    .slice(0, limit)
    .map((m) => m.hit);
}

async function localRecall(backend: EngramStore & SearchIndex, query: string, opts: RecallOptions): Promise<RecallResult> {
  const limit = opts.limit ?? DEFAULT_RECALL_LIMIT;
  // Rank a deeper pool than asked for, so fusion and shaping can reorder past the cut.
  const pool = Math.max(50, limit * 3);
  const legs: RecallResult['legs'] = { bm25: 'ran', vector: 'skipped' };
  const byId = new Map<string, RecallHit>();
  const hit = (engram: EngramDoc): RecallHit => {
    let h = byId.get(engram.id);
    if (!h) {
      h = { engram, score: 0, found_by: [], candidate: engram.status === 'candidate' };
      byId.set(engram.id, h);
    }
    return h;
  };

  const textOptions = opts.rarestTermRows === undefined ? undefined : { rarestTermRows: opts.rarestTermRows };
  (await backend.searchText(query, pool, 'any', textOptions)).forEach((r, i) => {
    const h = hit(r.engram);
    // Significant digits: FTS5 gives a word found in half the store or more an IDF of ~0 (1e-6).
    h.bm25 = { rank: i + 1, score: Number(r.score.toPrecision(4)) };
    h.found_by.push('bm25');
  });

  const dense = opts.fast ? undefined : opts.embedder;
  if (dense?.state === 'ready') {
    await backend.embedPending(dense.embedder);
    const vector = await dense.embedder.embedQuery(query);
    (await backend.searchVector(vector, pool, dense.model)).forEach((r, i) => {
      const h = hit(r.engram);
      h.vector = { rank: i + 1, cosine: round(r.cosine, 4) };
      h.found_by.push('vector');
    });
    legs.vector = 'ran';
    legs.model = dense.model;
  } else if (dense?.state === 'unavailable') {
    legs.vector = 'unavailable';
    legs.vector_reason = dense.reason;
    legs.model = dense.model;
  }

  const now = (opts.now ?? new Date()).getTime();
  const hits = [...byId.values()];
  // One leg: its own scores carry more than ranks do. Two legs: reciprocal rank fusion.
  const fused =
    legs.vector === 'ran'
      ? hits.map((h) => (h.bm25 ? 1 / (RRF_K + h.bm25.rank) : 0) + (h.vector ? 1 / (RRF_K + h.vector.rank) : 0))
      : hits.map((h) => h.bm25?.score ?? 0);
  // FTS5 gives ~0 to terms found in nearly every engram (a tiny store): then all are equal.
  const best = Math.max(...fused, 0);
  const relevance = new Map(hits.map((h, i) => [h.engram.id, best > 1e-4 ? fused[i]! / best : 1]));
  const factors = new Map<string, number>();
  shape(hits, relevance, factors, now);

  // The top hits spread activation to their associates, which may join the results.
  const sources = hits.slice(0, SPREAD_SOURCES).map((h) => ({ engram: h.engram, score: h.score }));
  const spread = await spreadActivation(backend, sources, new Map(hits.map((h) => [h.engram.id, h.engram])));
  if (spread.size > 0) {
    for (const [id, s] of spread) {
      const h = hit(s.engram);
      if (h.found_by.length === 0) {
        h.found_by.push('association');
        hits.push(h);
      }
      h.via = s.via;
      relevance.set(id, (relevance.get(id) ?? 0) + s.boost);
    }
  }
  // Of what matched, a statement that opens with a query term is about it (search/lead-term.ts).
  // Lifted after spreading: the push a source passes on is for its text, not for its subject.
  const opensWithTerm = leadTermMatcher(query);
  let lifted = false;
  for (const h of hits) {
    if (!opensWithTerm(h.engram.statement)) continue;
    relevance.set(h.engram.id, relevance.get(h.engram.id)! * LEAD_TERM_FACTOR);
    lifted = true;
  }
  if (spread.size > 0 || lifted) {
    const top = Math.max(...relevance.values());
    for (const [id, r] of relevance) relevance.set(id, r / top);
    shape(hits, relevance, factors, now);
  }
  // BM25 only (fast) means no model at all: no reranking either.
  if (!opts.reranker || opts.fast) return { query, legs, hits: hits.slice(0, limit) };
  const reranked = await rerankHead(hits, query, limit, opts.reranker);
  return { query, legs, hits: reranked.hits, reranker: reranked.reranker };
}

/**
 * Scores hits (relevance times the lifecycle factor, kept in `factors`) and sorts them best first.
 * The factor can lift a match above 1 (pinned, praised): scores are divided by the best one, so
 * the best scores 1, as documented, and the order is the factors' order.
 */
function shape(hits: RecallHit[], relevance: ReadonlyMap<string, number>, factors: Map<string, number>, now: number): void {
  const factor = (e: EngramDoc): number => {
    let f = factors.get(e.id);
    if (f === undefined) factors.set(e.id, (f = lifecycleFactor(e, now)));
    return f;
  };
  const raw = hits.map((h) => relevance.get(h.engram.id)! * factor(h.engram));
  const top = Math.max(...raw, 0);
  hits.forEach((h, i) => (h.score = round(top > 0 ? raw[i]! / top : 0, 4)));
  hits.sort((a, b) => b.score - a.score || factor(b.engram) - factor(a.engram) || byCodeUnit(a.engram.id, b.engram.id));
}

/** The cross-encoder step: reorders the head (the module and the model load only when asked for). */
async function rerankHead(
  hits: RecallHit[],
  query: string,
  limit: number,
  setting: RerankSetting,
): Promise<{ hits: RecallHit[]; reranker: RerankReport }> {
  const rr = await import('../rerank/reranker.js');
  const work = (async () => {
    const state = await rr.loadReranker(setting.root, setting.name);
    if (state.state === 'unavailable')
      return { hits, reranker: { state: 'unavailable' as const, model: setting.name, reason: state.reason } };
    return rr.rerank(hits, query, { reranker: state.reranker });
  })();
  const late =
    setting.budgetMs === undefined
      ? undefined
      : new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), setting.budgetMs).unref());
  const outcome = late ? await Promise.race([work, late]) : await work;
  if (!outcome) {
    work.catch(() => undefined);
    return {
      hits: hits.slice(0, limit),
      reranker: { state: 'unavailable', model: setting.name, reason: `not ready within ${setting.budgetMs} ms` },
    };
  }
  return { hits: outcome.hits.slice(0, limit), reranker: outcome.reranker };
}

/**
 * How the lifecycle bends relevance: activation (decay, and retrieval strength that feedback
 * moves), net feedback, pinning, dormancy. Kept within about 0.88..1.08, a few RRF ranks, so
 * it reorders near-equals but never buries a clearly better match.
 */
export function lifecycleFactor(e: EngramDoc, now: number): number {
  const activation = activationStrength(e, now); // 0..1, ~0.6 for a fresh engram
  const fb = e.feedback_signals ?? { positive: 0, negative: 0, neutral: 0 };
  const net = Math.tanh(((fb.positive ?? 0) - (fb.negative ?? 0)) / 3);
  let factor = 0.95 + 0.08 * activation + 0.03 * net;
  if (e.pinned) factor *= 1.03;
  if (e.status === 'dormant') factor *= 0.95;
  return factor;
}
