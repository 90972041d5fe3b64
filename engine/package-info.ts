import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// Where the svc package is installed and which version it is: one place for the hub's migrations
// and OpenAPI file, for every `--version`/server-info answer and for the files the code reads
// beside itself. This module runs from engine/ in the sources, from dist/engine/ when built, and
// from the CLI's bundle (dist/bin/svc.cjs), so the root is found by walking up, not assumed.

let root: string | undefined;
let codeRoot: string | undefined;
/** svc's package.json, read once (packageRoot finds it). */
let manifest: { name: string; version: string } | undefined;

/** The package manifest in `dir`: a package.json with a name, not a folder's `{"type": ...}` (bin/package.json). */
function manifestIn(dir: string): { name: string; version: string } | undefined {
  const file = join(dir, 'package.json');
  if (!existsSync(file)) return undefined;
  const json = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version: string };
  return typeof json.name === 'string' ? { name: json.name, version: json.version } : undefined;
}

/** The folder holding svc's package.json. */
export function packageRoot(): string {
  if (root) return root;
  const here = fileURLToPath(import.meta.url);
  let dir = dirname(here);
  while (!(manifest = manifestIn(dir))) {
    const up = dirname(dir);
    // Only a broken installation (files copied without package.json) gets here.
    // eslint-disable-next-line no-restricted-syntax -- a broken installation is an internal error, not a refusal
    if (up === dir) throw new Error('cannot find the svc package root from ' + here);
    dir = up;
  }
  return (root = dir);
}

/**
 * A file of svc's code or written by its build, by its path in the source tree
 * (`engine/mcp/tool-list.gen.json`): under dist/ when this runs built, in the sources otherwise.
 * The CLI's bundle holds hundreds of modules in one file, so `new URL('./x', import.meta.url)`
 * no longer names the folder a module was written in.
 */
export function codeFile(path: string): string {
  codeRoot ??= fileURLToPath(import.meta.url).startsWith(join(packageRoot(), 'dist') + sep) ? join(packageRoot(), 'dist') : packageRoot();
  return join(codeRoot, path);
}

/** svc's version, from its package.json. */
export function packageVersion(): string {
  packageRoot();
  return manifest!.version;
}
