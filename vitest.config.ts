import { defineConfig } from 'vitest/config';

// Tests live in each folder's test/ directory. CLI and concurrency tests spawn the
// compiled `dist/bin/svc.js`, which `npm test` builds first.
export default defineConfig({
  test: {
    include: ['{engine,tui,hooks,hub}/test/**/*.test.{ts,tsx}'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time (the default is one on a 2-core machine): most tests wait on child
    // processes, servers and timers rather than computing.
    maxWorkers: 2,
    minWorkers: 1,
    // No test reaches the internet for a model: the sources point at a closed local port unless a
    // test serves its own (engine/test/support/model-hub-stub.ts). Child processes inherit this.
    env: { HF_ENDPOINT: 'http://127.0.0.1:9', SVC_MODEL_ARCHIVE_URL: 'http://127.0.0.1:9', SVC_MODEL_BASE_URL: '' },
    // One migrated hub database (PGlite folder, PostgreSQL template) per run, copied per test file.
    globalSetup: ['hub/test/support/global-setup.ts'],
  },
});
