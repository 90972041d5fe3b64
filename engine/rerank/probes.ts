// Synthetic probe queries for the reranker gate. Each sampled engram yields one query whose
// expected answer is that engram: its statement with the stop words dropped, reduced to its most
// salient half (the rarest words in the store, so the probe points at this engram rather than at
// its neighbours), kept in the statement's order. A terse paraphrase, as agents query.

import { isStopWord } from '../search/stop-words.js';
import { words } from '../search/text-overlap.js';
import type { EngramDoc } from '../model/engram-types.js';
import { seededRandom } from '../seeded-random.js';

export const MIN_PROBE_WORDS = 2;
export const MAX_PROBE_WORDS = 6;

export interface Probe {
  /** The engram the query should find. */
  engram_id: string;
  query: string;
}

/** Content words: no stop words, no single characters, no bare numbers; first occurrence only. */
export function contentWords(text: string): string[] {
  const seen = new Set<string>();
  for (const w of words(text)) {
    if (w.length < 2 || /^\d+$/.test(w) || isStopWord(w)) continue;
    seen.add(w);
  }
  return [...seen];
}

/** Document frequency of each content word across the statements. */
export function documentFrequencies(statements: Iterable<string>): Map<string, number> {
  const df = new Map<string, number>();
  for (const s of statements) for (const w of contentWords(s)) df.set(w, (df.get(w) ?? 0) + 1);
  return df;
}

/**
 * The probe for one statement: its rarest content words (half of them, at least 2 and at most 6;
 * ties go to the earlier word), in their original order. Undefined when it has fewer than 2.
 */
export function synthesizeProbe(statement: string, df: ReadonlyMap<string, number>): string | undefined {
  const content = contentWords(statement);
  if (content.length < MIN_PROBE_WORDS) return undefined;
  const keep = Math.min(MAX_PROBE_WORDS, Math.max(MIN_PROBE_WORDS, Math.ceil(content.length / 2)));
  const chosen = new Set(
    content
      .map((w, i) => ({ w, i, df: df.get(w) ?? 1 }))
      .sort((a, b) => a.df - b.df || a.i - b.i)
      .slice(0, keep)
      .map((x) => x.w),
  );
  return content.filter((w) => chosen.has(w)).join(' ');
}

/**
 * Samples up to `sample` engrams (a seeded shuffle of the live engrams, so a seed reproduces the
 * sample) and synthesizes one probe each, passing over engrams too short to yield one.
 */
export function sampleProbes(engrams: EngramDoc[], sample: number, seed: number): { probes: Probe[]; passedOver: number } {
  const df = documentFrequencies(engrams.map((e) => e.statement));
  const order = [...engrams].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rand = seededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const probes: Probe[] = [];
  let passedOver = 0;
  for (const e of order) {
    if (probes.length >= sample) break;
    const query = synthesizeProbe(e.statement, df);
    if (query) probes.push({ engram_id: e.id, query });
    else passedOver += 1;
  }
  return { probes, passedOver };
}
