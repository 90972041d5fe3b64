import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join, sep } from 'node:path';
import { idStem, parseId } from '../model/ids.js';
import type { FileStamp, IndexedFile } from './sqlite-index.js';
import { fsyncDir, TEMP_PREFIX, writeFileDurable } from './durable-write.js';
import { dirMtime, ENGRAM_EXT, engramFiles, stampOf, type StoreParts } from './store-layout.js';
import { syncLogsLocked } from './store-logs.js';

// Keeping the local store's SQLite index in step with its YAML files: the reconcile on open
// (fast or full), the full rebuild, and the quarantine of files that cannot be read as
// engrams. The files are the source of truth; the index is derived and may always be rebuilt.

/**
 * Hot paths trust the folder's mtime for adds, deletes, renames and checkouts. An edit in place
 * (most editors, `>>`) leaves the folder's mtime alone: hot paths find those by stating the
 * indexed files a slice at a time, at most one slice per interval, resuming where the last one
 * stopped. A whole scan on a hot path cost ~150 ms at 10,000 files and seconds at 100,000, on
 * every prompt after a 30 s pause. A slice is bounded by files and by time: on the 2-core bench
 * machine a file's stat, its Stats object and its stamp cost 15-20 us, so 1,000 files were 14-20
 * ms of most prompts' hooks (prompts are further apart than the interval), where a machine with
 * a fast stat does 1,000 in a few ms. At least SCAN_SLICE_MIN_FILES go each time, so a loaded
 * machine still moves the sweep on. Inventory commands (`full`) still stat everything.
 */
const SCAN_SLICE_FILES = 1_000;
const SCAN_SLICE_MIN_FILES = 100;
/** 4 ms, read from process.hrtime: the `performance` global loads its modules on first use (1.5-2 ms of a process). */
const SCAN_SLICE_BUDGET_NS = 4_000_000n;
const SCAN_SLICE_INTERVAL_MS = 10_000;

/**
 * `fast`: trust the folder mtime, and stat one slice of the indexed files (see above); for
 * recall, hooks and writes, which run on every prompt. `full`: stat every file (~40 ms per
 * 10,000), for list, status and other inventory commands.
 */
export type ReconcileMode = 'fast' | 'full';

type Yaml = typeof import('./engram-yaml.js');
let yamlModule: Promise<Yaml> | undefined;
// YAML parsing and schema validation cost ~60 ms to import: only writes and reconciles need them.
export const loadYaml = (): Promise<Yaml> => (yamlModule ??= import('./engram-yaml.js'));

/** Indexes the files that changed since the index last looked (`catchUp` holds the lock when free). */
export async function reconcile(
  store: StoreParts,
  mode: ReconcileMode,
  catchUp: (fn: () => Promise<void> | void) => Promise<void>,
): Promise<void> {
  const mtime = dirMtime(store.engramsDir);
  if (mode === 'fast' && mtime === store.index.getMeta('dir_mtime')) return scanSlice(store, catchUp);
  const { changed, removed } = diff(store);
  if (changed.length > 0 || removed.length > 0) {
    await catchUp(async () => {
      const yaml = await loadYaml();
      for (const file of changed) {
        const path = join(store.engramsDir, file);
        if (!existsSync(path)) continue;
        const stamp = stampOf(path);
        const known = store.index.stampOf(file);
        if (known && known.mtime === stamp.mtime && known.size === stamp.size) continue; // a writer beat us to it
        indexFile(store, file, path, stamp, yaml);
      }
      for (const file of removed) if (!existsSync(join(store.engramsDir, file))) store.index.removeFile(file);
      if (!store.readOnly) removeTempFiles(store.engramsDir);
    });
  }
  await catchUp(() => {
    store.index.setMeta('dir_mtime', mtime);
    store.index.setMeta('scan_slice_at', String(Date.now()));
    store.index.setMeta('scan_cursor', '');
  });
}

/** One slice of the stat scan of a hot path: the indexed files after the cursor, in file order. */
async function scanSlice(store: StoreParts, catchUp: (fn: () => Promise<void> | void) => Promise<void>): Promise<void> {
  if (Date.now() - Number(store.index.getMeta('scan_slice_at') ?? 0) < SCAN_SLICE_INTERVAL_MS) return;
  const folder = inFolder(store);
  const deadline = process.hrtime.bigint() + SCAN_SLICE_BUDGET_NS;
  const stale: IndexedFile[] = [];
  let checked = 0;
  let last = '';
  let cut = false;
  // Rows are read as the files are stated: a slice cut short by its time reads no more of them.
  for (const known of store.index.indexedFilesAfter(store.index.getMeta('scan_cursor') ?? '', SCAN_SLICE_FILES)) {
    const st = statSync(folder + known.file, { throwIfNoEntry: false });
    if (!st || st.mtimeMs !== known.mtime || st.size !== known.size) stale.push(known);
    checked += 1;
    last = known.file;
    if (checked >= SCAN_SLICE_MIN_FILES && process.hrtime.bigint() > deadline) {
      cut = true;
      break;
    }
  }
  // The files ran out before the slice did: the next one starts again from the first file.
  const wraps = !cut && checked < SCAN_SLICE_FILES;
  await catchUp(async () => {
    if (stale.length > 0) {
      const yaml = await loadYaml();
      for (const { file } of stale) {
        const path = join(store.engramsDir, file);
        if (!existsSync(path)) {
          store.index.removeFile(file);
          continue;
        }
        const stamp = stampOf(path);
        const known = store.index.stampOf(file);
        if (known && known.mtime === stamp.mtime && known.size === stamp.size) continue; // a writer beat us to it
        indexFile(store, file, path, stamp, yaml);
      }
    }
    store.index.setMeta('scan_cursor', wraps ? '' : last);
    store.index.setMeta('scan_slice_at', String(Date.now()));
  });
}

/**
 * The engrams folder as a prefix for its bare file names. The scans join by hand: a process's
 * first thousand path.join() calls cost a fifth of a slice (3.5 of 17 ms at 100,000 engrams).
 */
const inFolder = (store: StoreParts): string => store.engramsDir + sep;

function diff(store: StoreParts): { changed: string[]; removed: string[] } {
  const indexed = store.index.indexedFiles();
  const changed: string[] = [];
  const folder = inFolder(store);
  for (const file of engramFiles(store.engramsDir)) {
    const known = indexed.get(file);
    indexed.delete(file);
    const stamp = stampOf(folder + file);
    if (!known || known.mtime !== stamp.mtime || known.size !== stamp.size) changed.push(file);
  }
  return { changed, removed: [...indexed.keys()] };
}

function indexFile(store: StoreParts, file: string, path: string, stamp: FileStamp, yaml: Yaml): void {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    quarantine(store, file, `unreadable: ${(err as Error).message}`);
    return;
  }
  const parsed = yaml.parseEngramYaml(text);
  if (!parsed.ok) {
    quarantine(store, file, parsed.reason);
    return;
  }
  const expected = file.slice(0, -ENGRAM_EXT.length);
  if (parsed.engram.id !== expected) {
    quarantine(store, file, `id "${parsed.engram.id}" does not match the file name`);
    return;
  }
  // A file that lost keys its indexed version had was cut short: never read (and rewritten) as whole.
  const previous = store.index.get(expected);
  const lost = previous ? yaml.lostFields(previous, parsed.keys) : [];
  if (lost.length > 0) {
    quarantine(store, file, `it lost ${lost.join(', ')}, which its previous version had: the file was cut short or damaged`);
    return;
  }
  // parseEngramYaml has just computed the statement's hash.
  store.index.upsert(parsed.engram, file, stamp, parsed.engram.content_hash);
  bumpCounter(store, expected);
}

/** Moves a bad file aside (never deletes it), drops it from the index and reports it. */
function quarantine(store: StoreParts, file: string, reason: string): void {
  mkdirSync(store.quarantineDir, { recursive: true });
  const dest = join(store.quarantineDir, `${file}.${new Date().toISOString().replace(/[:.]/g, '-')}`);
  renameSync(join(store.engramsDir, file), dest);
  writeFileDurable(`${dest}.reason.txt`, `${reason}\n`);
  fsyncDir(store.engramsDir);
  store.index.removeFile(file);
  // Its id stays taken: a later engram must not reuse the name of a quarantined one.
  bumpCounter(store, file.slice(0, -ENGRAM_EXT.length));
  store.warnings.push(`quarantined ${file}: ${reason} (moved to ${dest})`);
}

function bumpCounter(store: StoreParts, id: string): void {
  const p = parseId(id);
  if (p) store.index.setLastSeq(idStem(p.kind, p.prefix, p.day), p.seq);
}

function removeTempFiles(engramsDir: string): void {
  // Under the write lock no writer is mid-write, so any temp file belongs to a dead process.
  for (const f of readdirSync(engramsDir)) {
    if (f.startsWith(TEMP_PREFIX)) unlinkSync(join(engramsDir, f));
  }
}

/** Drops the index content and rebuilds it from the files (under the write lock). */
export async function rebuildLocked(store: StoreParts): Promise<void> {
  const yaml = await loadYaml();
  store.index.clear();
  removeTempFiles(store.engramsDir);
  for (const file of engramFiles(store.engramsDir).sort()) {
    const path = join(store.engramsDir, file);
    indexFile(store, file, path, stampOf(path), yaml);
  }
  if (existsSync(store.quarantineDir)) {
    for (const f of readdirSync(store.quarantineDir)) {
      const id = f.split(ENGRAM_EXT)[0]!;
      bumpCounter(store, id);
    }
  }
  syncLogsLocked(store, 'episodes');
  syncLogsLocked(store, 'events');
  store.index.setMeta('dir_mtime', dirMtime(store.engramsDir));
  store.index.setMeta('scan_slice_at', String(Date.now()));
}
