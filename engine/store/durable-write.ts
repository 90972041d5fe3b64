import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeSync, linkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

// A write is durable when it returns: the bytes reach a temp file that is fsynced, renamed
// over the target, and the folder is fsynced so the rename itself survives a power cut.
// Temp files start with `.tmp-` so scanners skip them; a crash leaves at most one behind.

export const TEMP_PREFIX = '.tmp-';

function tempPath(target: string): string {
  return join(dirname(target), `${TEMP_PREFIX}${basename(target)}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

function writeAndSync(path: string, data: string): void {
  const fd = openSync(path, 'wx', 0o644);
  try {
    const buf = Buffer.from(data, 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export function writeFileDurable(target: string, data: string): void {
  writeFilesDurable([[target, data]]);
}

/**
 * Writes several files durably with one folder fsync per folder instead of one per file: each
 * file is written to a temp name and fsynced, renamed into place, and the folders are fsynced
 * once at the end. A crash before that leaves each file either old or new, never torn.
 */
export function writeFilesDurable(files: ReadonlyArray<readonly [target: string, data: string]>): void {
  const dirs = new Set<string>();
  for (const [target, data] of files) {
    const tmp = tempPath(target);
    try {
      writeAndSync(tmp, data);
      renameSync(tmp, target);
    } catch (err) {
      try {
        unlinkSync(tmp);
      } catch {
        /* already gone */
      }
      throw err;
    }
    dirs.add(dirname(target));
  }
  for (const dir of dirs) fsyncDir(dir);
}

/** Creates `target` only if it does not exist yet; returns false when another writer won. */
export function createFileDurable(target: string, data: string): boolean {
  const tmp = tempPath(target);
  writeAndSync(tmp, data);
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
