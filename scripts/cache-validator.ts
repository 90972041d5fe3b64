import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { buildSync } from 'esbuild';
import { writeCodeCache } from '../engine/code-cache.cjs';
import { buildEngram } from '../engine/ops/learn.js';
import { COMMON_JS } from './support/common-js-bundle.js';

// Part of the build (`npm run build`): the generated validator in dist/ becomes one minified file
// with the two ajv helpers it requires (its formats and string length), which were read and
// compiled from node_modules with no cache by every process that validated (1.6 ms of the 3.7 it
// took to load); then its V8 code cache is written (see engine/code-cache.ts), after validating
// a good engram and a bad one, so that both paths are compiled into it. Bundled from the source
// file each time, so a second build does not bundle a bundle.

const SOURCE = fileURLToPath(new URL('../../engine/model/engram-validator.gen.cjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../engine/model/engram-validator.gen.cjs', import.meta.url));
writeFileSync(BUILT, buildSync({ ...COMMON_JS, entryPoints: [SOURCE] }).outputFiles[0]!.text);

const at = new Date().toISOString();
const good = {
  ...buildEngram({ statement: 'Use pnpm, not npm', scope: 'global', visibility: 'private', tags: ['tooling'] }, at, {
    scope: 'global',
    session_id: null,
    stored_at: at,
  }),
  id: 'ENG-2026-0101-001',
};
const bad = { ...good, id: 'nope', status: 'lost', statement: '', tags: [1], confidence: 7, extra_field: true };

await writeCodeCache(BUILT, (validate) => {
  for (const doc of [good, bad]) (validate as (value: unknown) => boolean)(doc);
});
