import type { EngramBackend } from '../backend.js';
import type { EngramDoc } from '../model/engram-schema.js';
import type { EmbedderState } from '../embed/embedder.js';
import { activationStrength } from '../model/activation.js';

export const DEFAULT_RECALL_LIMIT = 10;
/** Reciprocal rank fusion constant (Cormack et al.): damps the head of each ranking. */
export const RRF_K = 60;

export interface RecallHit {
  engram: EngramDoc;
  /** Final score: relevance (best = 1; BM25 score alone, else reciprocal rank fusion) shaped by the lifecycle. */
  score: number;
  /** Which rankings found it. */
  found_by: Array<'bm25' | 'vector'>;
  bm25?: { rank: number; score: number };
  vector?: { rank: number; cosine: number };
  /** Candidates are returned but marked: they are not yet trusted. */
  candidate: boolean;
}

export type VectorLeg = 'ran' | 'skipped' | 'unavailable';

export interface RecallResult {
  query: string;
  legs: { bm25: 'ran'; vector: VectorLeg; vector_reason?: string; model?: string };
  hits: RecallHit[];
}

export interface RecallOptions {
  limit?: number;
  /** BM25 only. */
  fast?: boolean;
  /** The dense leg; absent means it is skipped, `unavailable` means it was wanted and could not run. */
  embedder?: EmbedderState;
  now?: Date;
}

/**
 * Hybrid recall: BM25 and vector rankings fused by reciprocal rank fusion, then shaped by the
 * lifecycle (activation with decay, feedback, pinning, dormancy). Retired engrams never return.
 */
export async function recall(backend: EngramBackend, query: string, opts: RecallOptions = {}): Promise<RecallResult> {
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

  (await backend.searchText(query, pool)).forEach((r, i) => {
    const h = hit(r.engram);
    h.bm25 = { rank: i + 1, score: round(r.score) };
    h.found_by.push('bm25');
  });

  const dense = opts.fast ? undefined : opts.embedder;
  if (dense?.state === 'ready') {
    await backend.embedPending(dense.embedder);
    const vector = await dense.embedder.embedQuery(query);
    (await backend.searchVector(vector, pool, dense.model)).forEach((r, i) => {
      const h = hit(r.engram);
      h.vector = { rank: i + 1, cosine: round(r.cosine) };
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
  const factors = hits.map((h) => lifecycleFactor(h.engram, now));
  hits.forEach((h, i) => (h.score = round((best > 1e-4 ? fused[i]! / best : 1) * factors[i]!)));
  const order = hits.map((h, i) => ({ h, f: factors[i]! }));
  order.sort((a, b) => b.h.score - a.h.score || b.f - a.f || a.h.engram.id.localeCompare(b.h.engram.id));
  hits.splice(0, hits.length, ...order.map((o) => o.h));
  return { query, legs, hits: hits.slice(0, limit) };
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

const round = (x: number): number => Math.round(x * 10_000) / 10_000;
