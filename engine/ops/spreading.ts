import type { EngramReader } from '../backend.js';
import type { AssociationType, EngramDoc } from '../model/engram-types.js';
import { round } from '../text.js';

// Spreading activation (ACT-R): the top hits of a recall pass a share of their score to the
// engrams they are associated with (associations.ts), so what was learned or used together with
// a strong match rises with it, and can enter the results when no ranking found it. The share is
// the link's strength, which stops at 0.95: never the whole score. (Half of it, as before, ranked
// worse on each LoCoMo development file alone: README, Search.) Read only: associations are
// formed on writes.

/** How many of the top hits spread activation. */
export const SPREAD_SOURCES = 10;

/** The hit whose activation reached an engram, and along which link. */
export interface Via {
  id: string;
  type: AssociationType;
  strength: number;
}

export interface Spread {
  engram: EngramDoc;
  /** Added to the engram's relevance (best = 1): its source's score times the link's strength. */
  boost: number;
  via: Via;
}

/**
 * What the sources (best first, with their scores) spread to their associated engrams. An
 * engram reached by several keeps the strongest push (one source explains it); retired or
 * unreadable engrams get nothing. `known` spares reading engrams the rankings already returned.
 */
export async function spreadActivation(
  reader: EngramReader,
  sources: ReadonlyArray<{ engram: EngramDoc; score: number }>,
  known: ReadonlyMap<string, EngramDoc>,
): Promise<Map<string, Spread>> {
  const best = new Map<string, { boost: number; via: Via }>();
  for (const { engram, score } of sources) {
    for (const a of engram.associations ?? []) {
      if (a.target_type !== 'engram' || a.target === engram.id || score <= 0) continue;
      const boost = score * a.strength;
      const cur = best.get(a.target);
      if (!cur || boost > cur.boost) best.set(a.target, { boost, via: { id: engram.id, type: a.type, strength: a.strength } });
    }
  }
  const out = new Map<string, Spread>();
  const docs = await Promise.all([...best.keys()].map(async (id) => known.get(id) ?? (await reader.get(id))));
  [...best.entries()].forEach(([id, b], i) => {
    const engram = docs[i];
    if (engram && engram.status !== 'retired') out.set(id, { engram, boost: round(b.boost, 6), via: b.via });
  });
  return out;
}
