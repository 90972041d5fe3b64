import type { StoredConflict } from '../../engine/store/sync-conflicts.js';

// A sync conflict as the browser shows it (records in `<store>/conflicts/*.yaml`, see
// engine/store/sync-conflicts.ts): what the engram holds now against what the other machine had.

export type ConflictKeep = 'current' | 'other';

export interface ConflictView {
  /** The record's id: what resolving takes. */
  id: string;
  /** The file in conflict (engrams/<id>.yaml, or another file of the store). */
  path: string;
  engram?: string;
  /** The fields both machines changed differently; empty when the other version is a whole file. */
  fields: string[];
  /** Those fields as the engram holds them now, and as the other machine had them. */
  current: Record<string, unknown>;
  other: Record<string, unknown>;
  detectedAt: string;
  detectedOn: string;
}

export function toConflictView(c: StoredConflict): ConflictView {
  return {
    id: c.id,
    path: c.path,
    ...(c.engram_id ? { engram: c.engram_id } : {}),
    fields: c.fields ?? [],
    current: c.kept ?? {},
    other: c.other ?? {},
    detectedAt: c.detected_at,
    detectedOn: c.detected_on,
  };
}

/** One line on what is in conflict: "ENG-… (statement, rationale)" or the file. */
export function conflictSubject(c: ConflictView): string {
  return c.engram ? `${c.engram} (${c.fields.join(', ') || 'whole file'})` : c.path;
}

/** What the user confirms: which version stays. */
export function keepPrompt(c: ConflictView, keep: ConflictKeep): string {
  const what = c.engram ? `${c.engram}'s ${c.fields.join(', ') || 'file'}` : c.path;
  return keep === 'current'
    ? `Keep ${what} as it is now and drop the other machine's version?`
    : `Take the other machine's version of ${what}?`;
}
