import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Where the svc package is installed and which version it is: one place for the hub's migrations
// and OpenAPI file and for every `--version`/server-info answer. This module runs from engine/ in
// the sources and from dist/engine/ when built, so the root is found by walking up, not assumed.

let root: string | undefined;
let version: string | undefined;

/** The folder holding svc's package.json. */
export function packageRoot(): string {
  if (root) return root;
  const here = fileURLToPath(import.meta.url);
  let dir = dirname(here);
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    // Only a broken installation (files copied without package.json) gets here.
    // eslint-disable-next-line no-restricted-syntax -- a broken installation is an internal error, not a refusal
    if (up === dir) throw new Error('cannot find the svc package root from ' + here);
    dir = up;
  }
  return (root = dir);
}

/** svc's version, from its package.json. */
export function packageVersion(): string {
  return (version ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version);
}
