// Tension candidates: the pairs of engrams a tension scan asks the judge about, picked by the
// overlap of their content words; pairs linked by `supersedes` and two copies of one statement
// are never candidates.

import type { EngramDoc } from '../../model/engram-types.js';
import { contentTokens, overlapOf } from '../../search/text-overlap.js';
import { round, byCodeUnit } from '../../text.js';
import { pairKey } from '../../store/tension-records.js';

/** Pairs sharing less than this share of their content words are not candidates. */
export const MIN_OVERLAP = 0.2;

export interface CandidatePair {
  a: EngramDoc;
  b: EngramDoc;
  overlap: number;
  key: string;
}

/** True when either engram supersedes the other (as recorded on either side). */
export function linkedBySupersedes(a: EngramDoc, b: EngramDoc): boolean {
  const has = (e: EngramDoc, field: 'supersedes' | 'superseded_by', id: string): boolean => (e.relations?.[field] ?? []).includes(id);
  return has(a, 'supersedes', b.id) || has(b, 'supersedes', a.id) || has(a, 'superseded_by', b.id) || has(b, 'superseded_by', a.id);
}

/**
 * Pairs of engrams sharing content words, highest overlap first (then most shared words, then
 * ids), at or above `minOverlap`. Never a pair linked by supersedes, nor two engrams with the same
 * content hash (one statement learned at two scopes).
 */
export function candidatePairs(engrams: EngramDoc[], minOverlap = MIN_OVERLAP): CandidatePair[] {
  const tokens = engrams.map((e) => contentTokens(e.statement));
  // Inverted index; words found in very many engrams say nothing about a pair and are not used
  // to find pairs (they still count in the overlap).
  const maxDf = Math.max(25, Math.ceil(Math.sqrt(engrams.length) * 4));
  const postings = new Map<string, number[]>();
  tokens.forEach((set, i) => {
    for (const t of set) {
      const list = postings.get(t);
      if (list) list.push(i);
      else postings.set(t, [i]);
    }
  });
  const seen = new Set<number>();
  const pairs: Array<CandidatePair & { shared: number }> = [];
  const n = engrams.length;
  for (const list of postings.values()) {
    if (list.length < 2 || list.length > maxDf) continue;
    for (let x = 0; x < list.length; x++) {
      for (let y = x + 1; y < list.length; y++) {
        const i = list[x]!;
        const j = list[y]!;
        const code = i * n + j;
        if (seen.has(code)) continue;
        seen.add(code);
        const a = engrams[i]!;
        const b = engrams[j]!;
        if (a.id === b.id) continue;
        const { shared, jaccard: overlap } = overlapOf(tokens[i]!, tokens[j]!);
        if (overlap < minOverlap) continue;
        if (a.content_hash && a.content_hash === b.content_hash) continue;
        if (linkedBySupersedes(a, b)) continue;
        const [first, second] = a.id < b.id ? [a, b] : [b, a];
        pairs.push({ a: first, b: second, overlap: round(overlap, 4), key: pairKey(a.id, b.id), shared });
      }
    }
  }
  pairs.sort((p, q) => q.overlap - p.overlap || q.shared - p.shared || byCodeUnit(p.key, q.key));
  return pairs.map(({ shared: _shared, ...p }) => p);
}
