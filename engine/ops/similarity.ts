import type { EngramStore, SearchIndex } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import type { Embedder } from '../embed/embedder.js';

export type SimilarityReading = 'duplicate' | 'related' | 'new';

export interface SimilarityHit {
  engram: EngramDoc;
  cosine: number;
  reading: SimilarityReading;
}

/** Above 0.9 the two say the same thing; 0.7 to 0.9 they are about the same thing. */
export function readCosine(cosine: number): SimilarityReading {
  return cosine > 0.9 ? 'duplicate' : cosine >= 0.7 ? 'related' : 'new';
}

/** Raw embedding cosine of the query against live engrams, nearest first. */
export async function similaritySearch(
  backend: EngramStore & SearchIndex,
  embedder: Embedder,
  query: string,
  opts: { limit: number; scope?: string },
): Promise<SimilarityHit[]> {
  await backend.embedPending(embedder);
  const vector = await embedder.embedQuery(query);
  // A scope filter applies after the nearest-neighbour search: look deeper to still fill `limit`.
  const depth = opts.scope ? Math.max(opts.limit * 20, 200) : opts.limit;
  const hits = await backend.searchVector(vector, depth, embedder.model);
  return hits
    .filter((h) => !opts.scope || h.engram.scope === opts.scope)
    .slice(0, opts.limit)
    .map((h) => ({ engram: h.engram, cosine: Math.round(h.cosine * 10_000) / 10_000, reading: readCosine(h.cosine) }));
}
