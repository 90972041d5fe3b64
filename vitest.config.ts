import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Tests live in each folder's test/ directory. CLI and concurrency tests spawn the
// compiled `dist/bin/svc.js`, which `npm test` builds first.

const ALL = '{engine,tui,hooks,hub}/test/**/*.test.{ts,tsx}';
// The `slow` project: performance, stress and fuzz tests (many processes, random kills, thousands
// of generated cases), whose point is volume, not a behaviour a change is likely to break. `npm test`
// and CI run both projects; `npx vitest run --project fast` leaves these out for a quick loop.
const SLOW = [
  'engine/test/import-large.test.ts',
  'engine/test/yaml-codec.test.ts',
  'hub/test/fuzz-writes.test.ts',
  'tui/test/concurrency.test.ts',
  'tui/test/pack-kill.test.ts',
];

// Node 20 reads the file NODE_EXTRA_CA_CERTS names when a process starts, and builds its whole
// store of root certificates then, TLS or not: with the variable set to Debian's bundle (as on
// the machines that run this suite), \`node -e 0\` took 0.15-0.2 s of CPU instead of 0.03-0.05 s.
// The suite starts about 1,700 Node processes (CLI, hooks, hubs) and none of its tests leaves the
// loopback or trusts a certificate from that file: the variable goes before the workers start,
// so neither they nor their children pay it.
delete process.env.NODE_EXTRA_CA_CERTS;

/** Slow files start first, so that none of them runs alone at the end; then the longest first. */
class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [...sorted.filter((f) => f.project.name === 'slow'), ...sorted.filter((f) => f.project.name !== 'slow')];
  }
}

export default defineConfig({
  // TypeScript in .cts and .mts files too (Vite's default is .ts, .mts and .tsx): engine/code-cache.cts.
  esbuild: { include: /\.(?:[cm]?ts|tsx)$/ },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker process runs file after file without a fresh module graph each time: the hub, PGlite
    // and vitest itself load once per worker instead of once per file (a seventh of the suite's
    // CPU). Test files therefore must not leave global state behind: one that changes process.env
    // or the working directory restores it before it ends.
    isolate: false,
    // Two test files at a time (the default is one on a 2-core machine): most tests wait on child
    // processes, servers and timers rather than computing.
    maxWorkers: 2,
    // As many kept as started: without isolation vitest recycles the workers between projects, and a
    // worker the pool was retiring as idle at that moment failed the run ("Terminating worker
    // thread", seen with fewer minimum than maximum workers).
    minWorkers: 2,
    // No test reaches the internet for a model: the sources point at a closed local port unless a
    // test serves its own (engine/test/support/model-hub-stub.ts). Child processes inherit this.
    env: { HF_ENDPOINT: 'http://127.0.0.1:9', SVC_MODEL_ARCHIVE_URL: 'http://127.0.0.1:9', SVC_MODEL_BASE_URL: '' },
    // One migrated hub database (PGlite folder, PostgreSQL template) per run, copied per test file;
    // the two projects share it (global-setup.ts).
    globalSetup: ['hub/test/support/global-setup.ts'],
    sequence: { sequencer: SlowFirst },
    projects: [
      { extends: true, test: { name: 'fast', include: [ALL], exclude: SLOW } },
      { extends: true, test: { name: 'slow', include: SLOW } },
    ],
  },
});
