// Text overlap: the content words of a statement and the Jaccard overlap of two word sets. General
// text similarity helpers, used by the tension scan's candidate pairing and by audit's duplicate
// and subject checks.

import { isStopWord } from './stop-words.js';

/** Content words of a statement: folded, without stop words, light plural stemming. */
export function contentTokens(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (isStopWord(raw)) continue;
    if (raw.length < 2 && !/\p{N}/u.test(raw) && !/[^\p{Script=Latin}]/u.test(raw)) continue;
    out.add(raw.length > 3 && raw.endsWith('s') && !/(?:ss|us|is)$/.test(raw) ? raw.slice(0, -1) : raw);
  }
  return out;
}

export function jaccard(a: Set<string>, b: Set<string>): number {
  return overlapOf(a, b).jaccard;
}

export function overlapOf(a: Set<string>, b: Set<string>): { shared: number; jaccard: number } {
  if (a.size === 0 || b.size === 0) return { shared: 0, jaccard: 0 };
  let shared = 0;
  for (const t of a) if (b.has(t)) shared += 1;
  return { shared, jaccard: shared / (a.size + b.size - shared) };
}
