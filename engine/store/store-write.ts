import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramDoc } from '../model/engram-types.js';
import type { EventNote } from '../model/records.js';
import type { EngramEvent } from '../model/records.js';
import { formatId, idDay, idStem, type IdKind } from '../model/ids.js';
import { invalid } from '../errors.js';
import { writeFileDurable, writeFilesDurable } from './durable-write.js';
import { changeEvent } from '../model/change-event.js';
import { ENGRAM_EXT, readIdPrefix, stampOf, type StoreParts } from './store-layout.js';
import { loadYaml } from './store-reconcile.js';
import { appendLogLocked } from './store-logs.js';

// The local store's unit of write, once LocalStore holds the lock: allocating engram ids and
// writing the engrams put in the unit (validated, durably, with their change events). Each
// step records in `undo` how to put the files back if the unit fails before it commits.

/** Validates and writes `docs`, updates the index and appends their change events. */
export async function flushEngrams(
  store: StoreParts,
  docs: EngramDoc[],
  notes: Map<string, EventNote>,
  undo: Array<() => void>,
): Promise<void> {
  if (docs.length === 0) return;
  const { stringifyEngram } = await loadYaml();
  const { validateEngram } = await import('../model/validate-engram.js');
  for (const doc of docs) {
    const check = validateEngram(doc);
    if (!check.ok) throw invalid(`engram ${doc.id} is invalid`, check.errors);
  }
  const targets = docs.map((doc) => join(store.engramsDir, doc.id + ENGRAM_EXT));
  // If the write fails before it commits, each file goes back to what it was (or away).
  for (const target of targets) {
    const before = existsSync(target) ? readFileSync(target) : null;
    undo.push(() => (before === null ? rmSync(target, { force: true }) : writeFileDurable(target, before)));
  }
  writeFilesDurable(docs.map((doc, i) => [targets[i]!, stringifyEngram(doc)] as const));
  const events: EngramEvent[] = [];
  for (const doc of docs) {
    const file = doc.id + ENGRAM_EXT;
    const before = store.index.get(doc.id);
    store.index.upsert(doc, file, stampOf(join(store.engramsDir, file)));
    const event = changeEvent(before, doc, notes.get(doc.id));
    if (event) events.push(event);
  }
  // The history is appended under the same lock, right after the files it describes.
  if (events.length) appendLogLocked(store, 'events', events, undo);
}

/** The next free id of `kind` for `now`'s day, skipping ids taken by files or by `pending`. */
export function allocateId(store: StoreParts, kind: IdKind, now: Date, pending: Map<string, EngramDoc>): string {
  const stem = idStem(kind, readIdPrefix(store.root), idDay(now));
  let seq = store.index.lastSeq(stem);
  let id: string;
  // A file can exist without its row if a writer died between the two: never reuse it.
  do {
    seq += 1;
    id = formatId(kind, readIdPrefix(store.root), idDay(now), seq);
  } while (pending.has(id) || existsSync(join(store.engramsDir, id + ENGRAM_EXT)));
  store.index.setLastSeq(stem, seq);
  return id;
}
