import { defineConfig } from 'vitest/config';

// Tests live in each folder's test/ directory. CLI and concurrency tests spawn the
// compiled `dist/tui/cli.js`, which `npm test` builds first.
export default defineConfig({
  test: {
    include: ['{engine,tui,hooks,hub}/test/**/*.test.{ts,tsx}'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
