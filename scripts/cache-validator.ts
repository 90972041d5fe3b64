import { fileURLToPath } from 'node:url';
import { writeCodeCache } from '../engine/code-cache.cjs';
import { buildEngram } from '../engine/ops/learn.js';

// Part of the build (`npm run build`): writes the V8 code cache of the generated validator in
// dist/ (see engine/code-cache.ts), after validating a good engram and a bad one, so that both
// paths are compiled into it.

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

await writeCodeCache(fileURLToPath(new URL('../engine/model/engram-validator.gen.cjs', import.meta.url)), (validate) => {
  for (const doc of [good, bad]) (validate as (value: unknown) => boolean)(doc);
});
