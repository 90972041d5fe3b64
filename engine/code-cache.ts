import { readFileSync, writeFileSync } from 'node:fs';
import { Module, createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

// V8's code cache for a large CommonJS file on the start-up path (the generated engram
// validator, which svc learn loads on every call): the build compiles it once, runs it, and
// writes `<file>.v8cache` beside it (scripts/cache-validator.ts), so a process loading it
// skips parsing and compiling its functions again (about 4 ms). A cache written by another
// Node.js, or for another version of the file, is refused by V8 and the file compiles as usual.

const cacheOf = (file: string): string => `${file}.v8cache`;

function run(file: string, cachedData: Buffer | undefined): { script: Script; exports: unknown } {
  const script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file, ...(cachedData && { cachedData }) });
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(file), module, file, dirname(file));
  return { script, exports: module.exports };
}

/** `require(file)`, compiled from its code cache when there is one that fits. */
export function requireWithCodeCache(file: string): unknown {
  let cached: Buffer | undefined;
  try {
    cached = readFileSync(cacheOf(file));
  } catch {
    // no cache (a build without it, or the sources run directly): compile as usual
  }
  return run(file, cached).exports;
}

/** Writes the code cache of `file`, after `warm` has called what its callers call (so that is compiled and cached too). */
export function writeCodeCache(file: string, warm: (exports: unknown) => void): void {
  const { script, exports } = run(file, undefined);
  warm(exports);
  writeFileSync(cacheOf(file), script.createCachedData());
}
