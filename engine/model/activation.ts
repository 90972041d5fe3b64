import type { EngramDoc } from './engram-types.js';

// ACT-R style activation. Base-level learning: an item used n times, last `t` hours ago, has
// activation B = ln(n + 1) - d * ln(t), with decay d = 0.5 (ACT-R's default). Storage strength
// (how well learned, after Bjork's theory of disuse) slows decay: d_eff = d * (1 - s / 2).
// Retrieval strength (feedback moves it) scales the result. Ranking and batch decay read this.

export const ACT_R_DECAY = 0.5;
/** B at which recency weighs 0.5: about two days unused for an engram never recalled. */
const THRESHOLD = -2;
/** Below this retrieval strength, batch decay turns an active engram dormant. */
export const DORMANT_BELOW = 0.2;

const HOUR = 3_600_000;

function lastUse(e: EngramDoc): number {
  const stamps = [e.activation?.last_accessed, e.temporal?.learned_at, e.decayed_at as string | undefined];
  let best = NaN;
  for (const s of stamps) {
    const t = s ? Date.parse(s) : NaN;
    if (!Number.isNaN(t) && !(t <= best)) best = t;
  }
  return best;
}

export function effectiveDecay(e: EngramDoc): number {
  const storage = e.activation?.storage_strength ?? 1;
  return ACT_R_DECAY * (1 - storage / 2);
}

/** Base-level activation B; `now` and the last use in ms. */
export function baseLevel(e: EngramDoc, now: number): number {
  const last = lastUse(e);
  const hours = Number.isNaN(last) ? 1 : Math.max(1, (now - last) / HOUR);
  const uses = e.activation?.frequency ?? 0;
  return Math.log(uses + 1) - effectiveDecay(e) * Math.log(hours);
}

/** Activation in 0..1: retrieval strength times a logistic of base-level activation. */
export function activationStrength(e: EngramDoc, now: number): number {
  const recency = 1 / (1 + Math.exp(-(baseLevel(e, now) - THRESHOLD)));
  const retrieval = e.activation?.retrieval_strength ?? 0.7;
  return retrieval * (0.5 + 0.5 * recency);
}

/**
 * Power-law forgetting of retrieval strength over the days since the engram was last used or
 * last decayed: rs * (1 + days)^-d_eff. Returns the new strength (unchanged under a day).
 */
export function decayedRetrieval(e: EngramDoc, now: number): number {
  const rs = e.activation?.retrieval_strength ?? 0.7;
  const last = lastUse(e);
  if (Number.isNaN(last)) return rs;
  const days = (now - last) / (24 * HOUR);
  if (days < 1) return rs;
  return Math.round(rs * Math.pow(1 + days, -effectiveDecay(e)) * 1000) / 1000;
}
