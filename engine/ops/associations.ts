import type { EngramStore, RecordLog } from '../backend.js';
import type { Association, AssociationType, EngramDoc } from '../model/engram-types.js';
import { round } from '../text.js';

// Associations (the spec's engram model): weighted links between engrams that recall spreads
// activation along (see spreading.ts). They form on writes only, never on recall:
// - temporal: engrams learned one after another in the same session (an agent writes what
//   belongs together in one go), strongest between neighbours; formed when the session ends;
// - co_accessed: engrams confirmed useful together by one positive feedback batch, stronger
//   with every confirmation.
// Links are symmetric: each side holds its own entry.

/** The spec's ceiling: no link ever becomes certain. */
export const MAX_STRENGTH = 0.95;
/** Strength of a temporal link, by distance in learn order within the session (1 = the previous learning). */
export const TEMPORAL_STRENGTHS = [0.5, 0.25] as const;
/** What one positive feedback batch adds to a co_accessed link. */
export const CO_ACCESS_STEP = 0.15;
/** The most engrams of one feedback batch linked to each other (pairs grow quadratically). */
const CO_ACCESS_BATCH = 8;
/** Links kept per engram (the strongest, then the newest): bounds file size and recall's fan-out. */
export const MAX_ASSOCIATIONS = 24;

/** Sets (or strengthens to) `strength` the link of `type` from `from` to engram `to`; true when it changed. */
function link(from: EngramDoc, to: string, type: AssociationType, strength: (old: number) => number, at: string): boolean {
  const list = from.associations ?? [];
  const i = list.findIndex((a) => a.target_type === 'engram' && a.target === to && a.type === type);
  const old = i < 0 ? 0 : list[i]!.strength;
  const next = round(Math.min(MAX_STRENGTH, strength(old)), 3);
  if (i >= 0 && next <= old) return false;
  const entry: Association = { target_type: 'engram', target: to, strength: next, type, updated_at: at };
  const rest = list.filter((_, j) => j !== i);
  // Strongest first; among equals the newest. Beyond the cap the weakest, oldest go.
  from.associations = [entry, ...rest].sort((a, b) => b.strength - a.strength).slice(0, MAX_ASSOCIATIONS);
  return true;
}

/** Links two engrams both ways; the caller puts whichever changed. */
function linkBoth(a: EngramDoc, b: EngramDoc, type: AssociationType, strength: (old: number) => number, at: string): [boolean, boolean] {
  return [link(a, b.id, type, strength, at), link(b, a.id, type, strength, at)];
}

/** What a session's history says it learned, in learn order (a re-learning keeps its first place). */
async function sessionLearnings(backend: EngramStore & RecordLog, session: string): Promise<string[]> {
  const ids = new Set<string>();
  for (const e of await backend.listEvents({ session })) {
    if (e.engram_id && LEARN_ACTIONS.has(e.action)) ids.add(e.engram_id);
  }
  return [...ids];
}

const LEARN_ACTIONS: ReadonlySet<string> = new Set(['created', 'deduplicated', 'reactivated']);

/**
 * Temporal links among what a session learned, at its end: each learning to the ones learned
 * just before it (retired ones left out). One write, so learn itself stays one file write.
 * Returns how many engrams changed.
 */
export async function linkSessionLearnings(backend: EngramStore & RecordLog, session: string, at: string): Promise<number> {
  const ids = await sessionLearnings(backend, session);
  if (ids.length < 2) return 0;
  return backend.write(async (tx) => {
    const live: EngramDoc[] = [];
    for (const id of ids) {
      const e = await tx.get(id);
      if (e && e.status !== 'retired') live.push(e);
    }
    const changed = new Set<EngramDoc>();
    live.forEach((e, i) => {
      TEMPORAL_STRENGTHS.forEach((strength, d) => {
        const before = live[i - d - 1];
        if (!before) return;
        const [a, b] = linkBoth(e, before, 'temporal', (old) => Math.max(old, strength), at);
        if (a) changed.add(e);
        if (b) changed.add(before);
      });
    });
    for (const e of changed) await tx.put(e, { at, session });
    return changed.size;
  });
}

/** Co-access links among engrams confirmed together (all in `tx`'s hands); returns the ids it changed. */
export function linkCoAccessed(engrams: readonly EngramDoc[], at: string): Set<string> {
  const changed = new Set<string>();
  const group = engrams.slice(0, CO_ACCESS_BATCH);
  for (let i = 0; i < group.length; i++) {
    for (let j = i + 1; j < group.length; j++) {
      const [a, b] = linkBoth(group[i]!, group[j]!, 'co_accessed', (old) => old + CO_ACCESS_STEP, at);
      if (a) changed.add(group[i]!.id);
      if (b) changed.add(group[j]!.id);
    }
  }
  return changed;
}
