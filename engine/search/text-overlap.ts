// Text overlap: the words of a text, the content words of a statement and the Jaccard overlap of
// two word sets. The one copy of these rules: the tension scan's candidate pairing, audit's
// duplicate and subject checks, a pack's contradiction check, the reranker's probes and the
// queued-learn filter all split words here, so "status" is one word everywhere.

import { isStopWord } from './stop-words.js';

/** The words of a text (letters and digits, NFKC-folded, lowercased), in order. */
export function words(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** Light plural folding: "engrams" → "engram", but "status", "class", "analysis" stay. */
export const singular = (word: string): string =>
  word.length > 3 && word.endsWith('s') && !/(?:ss|us|is)$/.test(word) ? word.slice(0, -1) : word;

/** Content words of a statement: folded, without stop words (nor `drop`), light plural stemming. */
export function contentTokens(text: string, drop?: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const raw of words(text)) {
    if (isStopWord(raw) || drop?.has(raw)) continue;
    if (raw.length < 2 && !/\p{N}/u.test(raw) && !/[^\p{Script=Latin}]/u.test(raw)) continue;
    out.add(singular(raw));
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
