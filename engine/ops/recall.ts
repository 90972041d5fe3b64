import type { EngramBackend } from '../backend.js';
import type { EngramDoc } from '../model/engram-schema.js';

export const DEFAULT_RECALL_LIMIT = 10;

export interface RecallHit {
  engram: EngramDoc;
  score: number;
  /** Which rankings found it. */
  found_by: Array<'bm25' | 'vector'>;
  /** Candidates are returned but marked: they are not yet trusted. */
  candidate: boolean;
}

export interface RecallResult {
  query: string;
  legs: { bm25: 'ran'; vector: 'ran' | 'unavailable' | 'skipped' };
  hits: RecallHit[];
}

/** BM25 recall (the vector leg arrives with the embedder). Retired engrams never come back. */
export async function recall(
  backend: EngramBackend,
  query: string,
  opts: { limit?: number } = {},
): Promise<RecallResult> {
  const limit = opts.limit ?? DEFAULT_RECALL_LIMIT;
  const hits = await backend.searchText(query, limit);
  return {
    query,
    legs: { bm25: 'ran', vector: 'unavailable' },
    hits: hits.map((h) => ({
      engram: h.engram,
      score: round(h.score),
      found_by: ['bm25'],
      candidate: h.engram.status === 'candidate',
    })),
  };
}

const round = (x: number): number => Math.round(x * 10_000) / 10_000;
