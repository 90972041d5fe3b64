import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Which files a child process reads: `preload` goes to `node --require`, and `files()` lists what
 * the process read through fs.readFileSync, which CommonJS loads and code-cache reads both use.
 */
export function fileReadLog(): { preload: string; files(): string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-reads-'));
  const log = join(dir, 'reads.txt');
  const preload = join(dir, 'reads.cjs');
  writeFileSync(log, '');
  writeFileSync(
    preload,
    `const fs = require('node:fs');
const read = fs.readFileSync;
fs.readFileSync = function (file, ...rest) { fs.appendFileSync(${JSON.stringify(log)}, String(file) + '\\n'); return read.call(this, file, ...rest); };
`,
  );
  return { preload, files: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}
