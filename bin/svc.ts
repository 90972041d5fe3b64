#!/usr/bin/env node
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { codeCacheOf, runCommonJs } from '../engine/code-cache.cjs';
import { isPromptCommand } from './prompt-commands.cjs';

// Entry point of `svc`. Every prompt runs a hook, so start-up is paid on each: the commands run
// from one CommonJS bundle of the dispatcher (bin/dispatch.mts, bundled by scripts/bundle-cli.ts)
// compiled from V8's code cache, instead of some sixty ES modules each resolved, read and
// compiled again by every process; the commands a prompt runs, from a smaller bundle of their own
// (bin/prompt-commands.cts). This file is CommonJS itself (bin/package.json): an ES
// module as the entry point made Node start its ES module loader first, 5-6 ms of every command.

const BUNDLE = join(__dirname, isPromptCommand(process.argv[2]) ? 'svc-prompt.cjs' : 'svc.cjs');

// Relative specifiers are the bundle's own ES-module islands (dist/tui/browse/app.js), beside it.
const dynamicImport = (specifier: string): Promise<unknown> =>
  import(specifier.startsWith('.') ? new URL(specifier, pathToFileURL(BUNDLE)).href : specifier);

let bundle;
try {
  bundle = runCommonJs(BUNDLE, { dynamicImport });
} catch (err) {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  process.stderr.write(`svc: ${BUNDLE} is missing: build svc (npm run build)\n`);
  process.exit(1);
}
// The build runs a few commands with this set, each adding what it compiled to the cache.
if (process.env.SVC_BUILD_CODE_CACHE === '1') {
  const { script } = bundle;
  process.once('exit', () => writeFileSync(codeCacheOf(BUNDLE), script.createCachedData()));
}
void (bundle.exports as { start(argv: string[]): Promise<void> }).start(process.argv.slice(2));
