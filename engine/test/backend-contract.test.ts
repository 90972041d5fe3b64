import { afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { MultiStore } from '../store/multi-store.js';
import { addStore } from '../store/store-admin.js';
import { MemoryBackend } from './support/memory-backend.js';
import { runBackendContract } from './support/backend-contract.js';

// The engine's contract on the backends of this machine and on the reference one; the hub's
// PostgreSQL backend runs the same suite in hub/test/backend-acceptance.test.ts.

const base = mkdtempSync(join(tmpdir(), 'svc-contract-'));
let n = 0;
const folder = () => join(base, `store-${++n}`);
afterAll(() => rmSync(base, { recursive: true, force: true }));

runBackendContract('the in-memory reference backend', async () => ({ backend: new MemoryBackend(), teardown: async () => {} }));

runBackendContract('the local store', async () => {
  const store = await LocalStore.open(folder());
  return { backend: store, teardown: async () => store.close() };
});

// A primary store and one registered for project:web, where most cases write: engrams route by
// scope, reads span both (dedup across scopes crosses stores).
runBackendContract('the multi-store', async () => {
  const primary = folder();
  (await LocalStore.open(primary)).close();
  await addStore(primary, { path: folder(), scope: 'project:web' });
  const multi = await MultiStore.open(primary);
  return { backend: multi, teardown: async () => multi.close() };
});
