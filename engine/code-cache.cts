import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

// V8's code cache for the large CommonJS files on the start-up path: the CLI's bundle
// (dist/bin/svc.cjs, every command in one file) and the generated engram validator. Node 20
// keeps no compiled code between processes for ES modules, and compiling svc's code took a
// third of a command's own time; a file run here instead reads `<file>.v8cache`, written by
// the build, and skips parsing and compiling every function the cache holds. A cache written
// by another Node.js (or V8 flags), or for another version of the file, is refused by V8 and the
// file compiles as usual.

export const codeCacheOf = (file: string): string => `${file}.v8cache`;

/** What a file run here gets besides CommonJS's five names: `import()` for code compiled by `vm`, which has none of its own. */
export type DynamicImport = (specifier: string) => Promise<unknown>;

export interface CachedRun {
  exports: unknown;
  /** The compiled file: `createCachedData()` writes what it has compiled so far. */
  script: Script;
  /** Whether V8 refused the file's code cache (undefined: there was none). */
  cacheRejected: boolean | undefined;
}

function readCache(file: string): Buffer | undefined {
  try {
    return readFileSync(codeCacheOf(file));
  } catch {
    return undefined; // no cache (a build without it, or the sources run directly): compile as usual
  }
}

/** Runs the CommonJS `file`, compiled from its code cache (unless `fromCache` is false) when V8 accepts it. */
export function runCommonJs(
  file: string,
  { fromCache = true, dynamicImport }: { fromCache?: boolean; dynamicImport?: DynamicImport } = {},
): CachedRun {
  const cachedData = fromCache ? readCache(file) : undefined;
  const source = readFileSync(file, 'utf8');
  // Strict, as the ES modules the bundle was made of were (a directive after the bundle's banner would not count).
  const wrapper = `(function (exports, require, module, __filename, __dirname, __svcImport) {"use strict";${source}\n})`;
  const script = new Script(wrapper, { filename: file, ...(cachedData && { cachedData }) });
  // Not named `module` or `exports`: in this CommonJS file those are its own.
  const ran = { exports: {} as unknown };
  (script.runInThisContext() as (...args: unknown[]) => void)(ran.exports, createRequire(file), ran, file, dirname(file), dynamicImport);
  return { script, exports: ran.exports, cacheRejected: cachedData && script.cachedDataRejected };
}

/** `require(file)`, compiled from its code cache when there is one that fits. */
export function requireWithCodeCache(file: string): unknown {
  return runCommonJs(file).exports;
}

/** Writes the code cache of `file`, after `warm` has called what its callers call (so that is compiled and cached too). */
export async function writeCodeCache(file: string, warm: (value: unknown) => void | Promise<void>): Promise<void> {
  const { script, exports: value } = runCommonJs(file, { fromCache: false });
  await warm(value);
  writeFileSync(codeCacheOf(file), script.createCachedData());
}
