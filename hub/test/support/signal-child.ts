// Run by teardown-signals.test.ts as a real child process (through vite-node): `setup` runs the
// test run's global setup, `browser` launches Chromium as browser tests do. Each prints one line
// (JSON) when ready and then waits to be signalled.
import setup from './global-setup.js';
import { launchBrowser } from './browser.js';

const what = process.argv[2];
if (what === 'setup') {
  const provided: Record<string, unknown> = {};
  await setup({ provide: (key: string, value: unknown) => (provided[key] = value) } as never);
  process.stdout.write(JSON.stringify(provided) + '\n');
} else {
  await launchBrowser();
  process.stdout.write(JSON.stringify({ pid: process.pid }) + '\n');
}
setInterval(() => undefined, 60_000);
