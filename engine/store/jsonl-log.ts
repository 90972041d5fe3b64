import { closeSync, existsSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { fsyncDir } from './durable-write.js';

// Append-only JSON-lines files (episodes, change events). Appends happen under the store's
// write lock, end with fsync, and only whole lines count: a line cut short by a crash was
// never acknowledged, so it is dropped before the next append and ignored by readers.

export function appendLines(path: string, lines: string[]): number {
  const created = !existsSync(path);
  const fd = openSync(path, 'a+');
  try {
    let size = fstatSync(fd).size;
    if (size > 0) {
      const tail = Buffer.alloc(1);
      readSync(fd, tail, 0, 1, size - 1);
      if (tail[0] !== 0x0a) {
        size = lastNewlineEnd(fd, size);
        ftruncateSync(fd, size);
      }
    }
    const buf = Buffer.from(lines.map((l) => l + '\n').join(''), 'utf8');
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
    return size + buf.length;
  } finally {
    closeSync(fd);
    if (created) fsyncDir(dirname(path));
  }
}

/** Offset just past the last newline before `size` (0 if none). */
function lastNewlineEnd(fd: number, size: number): number {
  const chunk = Buffer.alloc(4096);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const n = readSync(fd, chunk, 0, end - start, start);
    const i = chunk.subarray(0, n).lastIndexOf(0x0a);
    if (i !== -1) return start + i + 1;
    end = start;
  }
  return 0;
}

/** The complete lines from `offset` on, and the offset after the last complete one. */
export function readLinesFrom(path: string, offset: number): { lines: string[]; end: number } {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return { lines: [], end: offset };
    const buf = Buffer.alloc(size - offset);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, offset + got);
      if (n === 0) break;
      got += n;
    }
    const last = buf.subarray(0, got).lastIndexOf(0x0a);
    if (last === -1) return { lines: [], end: offset };
    const lines = buf
      .subarray(0, last)
      .toString('utf8')
      .split('\n')
      .filter((l) => l.trim() !== '');
    return { lines, end: offset + last + 1 };
  } finally {
    closeSync(fd);
  }
}
