import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
  linkSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { processRuns } from '../process-runs.js';
import { uniqueHex } from '../unique-hex.js';

// A write is durable when it returns: the bytes reach a temp file that is fsynced, renamed
// over the target, and the folder is fsynced so the rename itself survives a power cut.
// Temp files start with `.tmp-` so scanners skip them; a crash leaves at most one behind.
// The one place svc writes files this way: the store, sync, and the installers' config files;
// caches are written here too, atomically but without the fsyncs (writeCacheFile).

export const TEMP_PREFIX = '.tmp-';

export type FileData = string | Buffer;

function tempPath(target: string): string {
  return join(dirname(target), `${TEMP_PREFIX}${basename(target)}-${process.pid}-${uniqueHex(4)}`);
}

/**
 * Removes the temp files in `dir` whose writer is gone (its pid, in the name, runs no more): a
 * kill mid-write leaves one behind. Another live writer's temp file is left alone.
 */
export function removeOrphanTemps(dir: string): number {
  let removed = 0;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const pid = Number(/-(\d+)-[0-9a-f]{8}$/.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && processRuns(pid)) continue;
    try {
      unlinkSync(join(dir, name));
      removed += 1;
    } catch {
      /* gone already */
    }
  }
  return removed;
}

function writeAndSync(path: string, data: FileData, mode: number): void {
  const fd = openSync(path, 'wx', mode);
  try {
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDir(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return; // some platforms cannot open a folder for fsync; the renames are done
  }
  try {
    fsyncSync(fd);
  } catch {
    /* nor fsync one */
  } finally {
    closeSync(fd);
  }
}

export interface DurableOptions {
  /** File mode of new files (default 0644); applied exactly, whatever the umask. */
  mode?: number;
  /** Create missing parent folders. */
  mkdir?: boolean;
}

export function writeFileDurable(target: string, data: FileData, opts: DurableOptions = {}): void {
  writeFilesDurable([[target, data]], opts);
}

/**
 * Writes several files durably with one folder fsync per folder instead of one per file: each
 * file is written to a temp name and fsynced, renamed into place, and the folders are fsynced
 * once at the end. A crash before that leaves each file either old or new, never torn.
 */
export function writeFilesDurable(files: ReadonlyArray<readonly [target: string, data: FileData]>, opts: DurableOptions = {}): void {
  const dirs = new Set<string>();
  for (const [target, data] of files) {
    if (opts.mkdir) mkdirSync(dirname(target), { recursive: true });
    replaceThroughTemp(target, (tmp) => {
      writeAndSync(tmp, data, opts.mode ?? 0o644);
      if (opts.mode !== undefined) chmodSync(tmp, opts.mode);
    });
    dirs.add(dirname(target));
  }
  for (const dir of dirs) fsyncDir(dir);
}

/**
 * Replaces a cache's file whole (a reader never sees half of it), without the fsyncs: after a
 * power cut it may be old, empty or gone, which a cache's reader takes as a miss. The fsyncs were
 * paid by every prompt that asked the hub (0.1 ms here, milliseconds on a disk that flushes).
 */
export function writeCacheFile(target: string, data: string): void {
  mkdirSync(dirname(target), { recursive: true });
  replaceThroughTemp(target, (tmp) => writeFileSync(tmp, data, { flag: 'wx' }));
}

/** `fill` writes a temp file beside `target`, which is then renamed over it; the temp file goes when either fails. */
function replaceThroughTemp(target: string, fill: (tmp: string) => void): void {
  const tmp = tempPath(target);
  try {
    fill(tmp);
    renameSync(tmp, target);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      /* already gone */
    }
    throw err;
  }
}

/** Creates `target` only if it does not exist yet; returns false when another writer won. */
export function createFileDurable(target: string, data: string): boolean {
  const tmp = tempPath(target);
  writeAndSync(tmp, data, 0o644);
  try {
    linkSync(tmp, target);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
    fsyncDir(dirname(target));
  }
}
