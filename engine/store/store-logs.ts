import { existsSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramEvent, Episode } from '../model/records.js';
import { appendLines, readLinesFrom } from './jsonl-log.js';
import { makeDirs, type StoreParts } from './store-layout.js';

// The local store's episodes and events logs: JSON-lines files under `episodes/` (one a day)
// and `events/` (one a month), indexed into SQLite as they grow. Other processes (and git
// pulls) append too, so readers catch up with the files before they query the index.

export type LogKind = 'episodes' | 'events';
const LOG_EXT = '.jsonl';

function logFiles(root: string, kind: LogKind): string[] {
  const dir = join(root, kind);
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith(LOG_EXT))
        .sort()
    : [];
}

/** Indexes what other processes appended to the logs since we last looked. */
export async function syncLogs(store: StoreParts, kind: LogKind, catchUp: (fn: () => void) => Promise<void>): Promise<void> {
  const behind = logFiles(store.root, kind).some(
    (f) => statSync(join(store.root, kind, f)).size !== store.index.logIndexed(`${kind}/${f}`),
  );
  if (behind) await catchUp(() => syncLogsLocked(store, kind));
}

export function syncLogsLocked(store: StoreParts, kind: LogKind): void {
  for (const f of logFiles(store.root, kind)) {
    const rel = `${kind}/${f}`;
    const path = join(store.root, kind, f);
    let indexed = store.index.logIndexed(rel);
    if (statSync(path).size < indexed) {
      store.index.forgetLog(rel); // rewritten behind our back (a git checkout): read it again
      indexed = 0;
    }
    const { lines, end } = readLinesFrom(path, indexed);
    for (const line of lines) indexLogLine(store, kind, rel, line);
    store.index.setLogIndexed(rel, end);
  }
}

function indexLogLine(store: StoreParts, kind: LogKind, rel: string, line: string): void {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    store.warnings.push(`skipped an unreadable line in ${rel}`);
    return;
  }
  if (kind === 'episodes') store.index.addEpisode(record as Episode, rel);
  else store.index.addEvent(record as EngramEvent, rel);
}

/**
 * Appends records to this month's (events) or today's (episodes) log and indexes them. Under
 * the write lock; `undo` gets the step that truncates each file back if the write fails.
 */
export function appendLogLocked(store: StoreParts, kind: LogKind, records: Array<Episode | EngramEvent>, undo: Array<() => void>): void {
  const dir = join(store.root, kind);
  makeDirs(dir);
  syncLogsLocked(store, kind);
  const byFile = new Map<string, Array<Episode | EngramEvent>>();
  for (const r of records) {
    const day = r.at.slice(0, kind === 'events' ? 7 : 10);
    const f = `${day}${LOG_EXT}`;
    byFile.set(f, [...(byFile.get(f) ?? []), r]);
  }
  for (const [f, group] of byFile) {
    const rel = `${kind}/${f}`;
    const path = join(dir, f);
    const before = existsSync(path) ? statSync(path).size : null;
    undo.push(() => (before === null ? rmSync(path, { force: true }) : truncateSync(path, before)));
    const size = appendLines(
      path,
      group.map((r) => JSON.stringify(r)),
    );
    for (const r of group) indexLogLine(store, kind, rel, JSON.stringify(r));
    store.index.setLogIndexed(rel, size);
  }
}
