import type { EngramDoc } from './engram-types.js';
import type { EngramEvent, EngramEventAction, EventNote } from './records.js';

// Every backend records the same history for a write: this decides what the event says.

/** What a write did to an engram, for its history: named by the operation, else inferred. */
export function changeEvent(before: EngramDoc | null, after: EngramDoc, note: EventNote | undefined): EngramEvent | null {
  const changed = before ? changedFields(before, after) : [];
  let action: EngramEventAction | undefined = note?.action;
  if (!action) {
    if (!before) action = 'created';
    else if (after.status === 'retired' && before.status !== 'retired') action = 'retired';
    else if (changed.length === 0) return null;
    else action = 'updated';
  }
  return {
    at: note?.at ?? new Date().toISOString(),
    action,
    engram_id: after.id,
    ...(note?.session ? { session: note.session } : {}),
    ...(changed.length ? { changed } : {}),
    ...(note?.details ? { details: note.details } : {}),
  };
}

/** Top-level fields whose values differ between two versions of an engram. */
export function changedFields(before: EngramDoc, after: EngramDoc): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].filter(
    (k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]),
  );
}
