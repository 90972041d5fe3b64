import type { EngramStore } from '../../backend.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { contentHash } from '../../model/content-hash.js';
import { polarityOf } from '../../model/polarity.js';
import { contentTokens, overlapOf } from '../../search/text-overlap.js';

// Conflicts between a pack's engrams and the live engrams of the store (other than the pack's
// own). Reported, never blocking:
//   duplicate      same content hash as an existing engram (the normalized statement is equal);
//   contradiction  same subject, opposite polarity: one says do, the other don't, and their
//                  content words (stop words and the polarity words themselves removed, light
//                  plural folding) overlap by Jaccard >= 0.5 with at least one word shared;
//   duplicate_in_pack  the same statement twice in the pack: the first one installs;
//   original_here  (install) this store holds the engram the pack's copy came from (the pack
//                  was exported from this store, or from a clone of it): it is not installed.
// Detection builds an inverted index over the store's words once, so 1,000 pack engrams
// against 10,000 stored ones cost milliseconds.

export type ConflictKind = 'duplicate' | 'contradiction' | 'duplicate_in_pack' | 'original_here';

export interface PackConflict {
  kind: ConflictKind;
  /** The pack's engram. */
  id: string;
  statement: string;
  /** The engram it conflicts with. */
  existing: string;
  existing_statement: string;
  existing_scope?: string;
  /** Word overlap, for contradictions. */
  overlap?: number;
}

export const CONTRADICTION_OVERLAP = 0.5;

const POLARITY_WORDS = new Set([
  'always',
  'never',
  'avoid',
  'prefer',
  'use',
  'using',
  'dont',
  'don',
  'not',
  'no',
  'must',
  'mustn',
  'should',
  'shouldn',
  'stop',
  'forbid',
  'forbidden',
  'prohibit',
  'prohibited',
  'allowed',
  'refrain',
  'ensure',
  'make',
  'sure',
  'please',
  'do',
  'cannot',
  'can',
  'longer',
]);

/** The words that say what a statement is about (its polarity words removed). */
export const contentWords = (statement: string): Set<string> => contentTokens(statement, POLARITY_WORDS);

/** Finds duplicates and contradictions of `incoming` among `existing` (already filtered to live engrams not of this pack). */
export function findConflicts(incoming: EngramDoc[], existing: EngramDoc[]): PackConflict[] {
  const byHash = new Map<string, EngramDoc[]>();
  const words = new Map<string, Set<string>>();
  const postings = new Map<string, EngramDoc[]>();
  for (const e of existing) {
    const hash = e.content_hash ?? contentHash(e.statement);
    byHash.set(hash, [...(byHash.get(hash) ?? []), e]);
    if (!polarityOf(e)) continue;
    const w = contentWords(e.statement);
    words.set(e.id, w);
    for (const word of w) {
      let list = postings.get(word);
      if (!list) postings.set(word, (list = []));
      list.push(e);
    }
  }

  const conflicts: PackConflict[] = [];
  for (const p of incoming) {
    const base = { id: p.id, statement: p.statement };
    const hash = contentHash(p.statement);
    // The same id is the engram itself (a pack installed into the store it came from).
    const twins = (byHash.get(hash) ?? []).filter((t) => t.id !== p.id);
    for (const t of twins) {
      conflicts.push({ kind: 'duplicate', ...base, existing: t.id, existing_statement: t.statement, existing_scope: t.scope });
    }
    const polarity = polarityOf(p);
    if (!polarity) continue;
    const mine = contentWords(p.statement);
    const seen = new Set<string>([p.id, ...twins.map((t) => t.id)]);
    for (const word of mine) {
      for (const e of postings.get(word) ?? []) {
        if (seen.has(e.id)) continue;
        seen.add(e.id);
        const other = polarityOf(e);
        if (!other || other === polarity) continue;
        const { jaccard: score, shared } = overlapOf(mine, words.get(e.id)!);
        if (shared < 1 || score < CONTRADICTION_OVERLAP) continue;
        conflicts.push({
          kind: 'contradiction',
          ...base,
          existing: e.id,
          existing_statement: e.statement,
          existing_scope: e.scope,
          overlap: Math.round(score * 100) / 100,
        });
      }
    }
  }
  return conflicts;
}

/** Keeps the first engram of each statement; the others are reported. */
function inPackDuplicates(engrams: EngramDoc[]): { unique: EngramDoc[]; conflicts: PackConflict[] } {
  const first = new Map<string, EngramDoc>();
  const unique: EngramDoc[] = [];
  const conflicts: PackConflict[] = [];
  for (const e of engrams) {
    const hash = contentHash(e.statement);
    const seen = first.get(hash);
    if (seen) {
      conflicts.push({
        kind: 'duplicate_in_pack',
        id: e.id,
        statement: e.statement,
        existing: seen.id,
        existing_statement: seen.statement,
      });
      continue;
    }
    first.set(hash, e);
    unique.push(e);
  }
  return { unique, conflicts };
}

/** The pack's engrams (each statement once) and their conflicts: within the pack, then with the store's live engrams that are not this pack's own. */
export async function packConflicts(
  backend: EngramStore,
  name: string,
  engrams: EngramDoc[],
): Promise<{ unique: EngramDoc[]; inPack: PackConflict[]; conflicts: PackConflict[] }> {
  const { unique, conflicts: inPack } = inPackDuplicates(engrams);
  const outside = (await backend.list({})).filter((e) => e.pack !== name);
  return { unique, inPack, conflicts: [...inPack, ...findConflicts(unique, outside)] };
}
