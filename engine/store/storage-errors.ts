import { statfsSync } from 'node:fs';
import { SvcError } from '../errors.js';

// What went wrong with the disk under a store, in words a user can act on. SQLite reports a
// full disk as "database or disk is full", or, with a few KB left, as "disk I/O error"; node
// as ENOSPC. A read-only mount is EROFS (or EACCES for a folder the user may not write).

/** Under this much free space, an I/O error is a full disk. */
const NEARLY_FULL_BYTES = 1024 * 1024;

export function freeBytes(path: string): number | undefined {
  try {
    const s = statfsSync(path);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

export function isDiskFull(err: unknown, root: string): boolean {
  const code = String((err as { code?: string })?.code ?? '');
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') return true;
  if (code.startsWith('SQLITE_IOERR') || code === 'EIO') {
    const free = freeBytes(root);
    return free !== undefined && free < NEARLY_FULL_BYTES;
  }
  return false;
}

export function isReadOnly(err: unknown): boolean {
  const code = String((err as { code?: string })?.code ?? '');
  return code === 'EROFS' || code === 'EACCES' || code === 'EPERM' || code === 'SQLITE_READONLY' || code.startsWith('SQLITE_CANTOPEN');
}

/** The error a write that failed on the disk is reported as (nothing of it was kept). */
export function writeFailure(err: unknown, root: string): unknown {
  if (err instanceof SvcError) return err;
  if (isDiskFull(err, root))
    return new SvcError('storage', `the disk holding the store at ${root} is full: nothing was written; free some space and try again`);
  if (isReadOnly(err))
    return new SvcError(
      'storage',
      `the store at ${root} cannot be written here (${(err as Error).message.split('\n')[0]}): nothing was written`,
    );
  return err;
}
