import type { EngramDoc } from './engram-types.js';

// When an engram was learned: its temporal.learned_at, else when its first source was stored
// (engrams written by older versions, or by hand, may lack the first). One rule for lists that
// order newest first and for the tension scan's "which came later".

export function learnedAt(e: EngramDoc): string | undefined {
  return e.temporal?.learned_at || e.sources?.[0]?.stored_at || undefined;
}

/** Newest first, then by id (descending) so equal times keep one order everywhere. */
export function byLearnedAtDesc(a: EngramDoc, b: EngramDoc): number {
  const la = learnedAt(a) ?? '';
  const lb = learnedAt(b) ?? '';
  if (la !== lb) return la < lb ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}
