import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { CLI } from '../../../engine/test/support/run-svc.js';

// `svc hub` as a real child process (the compiled CLI), for tests that need two hub processes
// on one database or the server command itself. One-shot commands run through engine/test/support/run-svc.

export interface HubProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<number | null>;
}

/**
 * On V8's baseline WebAssembly compiler, as the one-shot `svc hub` commands run: a test's hub
 * answers a few dozen requests, and V8 optimizing PGlite's Postgres for them cost CPU it never
 * got back (a start, 20 requests and a stop: 4.6 s of CPU, 2.6 s so; `node -e 0` 100 ms). The
 * code paths are the same; only the machine code differs.
 */
export function startHubProcess(env: NodeJS.ProcessEnv, args: string[] = []): Promise<HubProcess> {
  const child = spawn(
    process.execPath,
    ['--liftoff-only', CLI, 'hub', ...(args.includes('--port') ? [] : ['--port', '0']), '--json', ...args],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc hub did not start in 30 s: ${out}${err}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) return;
      clearTimeout(timer);
      const { url } = JSON.parse(line) as { url: string };
      resolve({
        url,
        child,
        stop: () =>
          new Promise((done) => {
            if (child.exitCode !== null) return done(child.exitCode);
            child.once('exit', (code) => done(code));
            child.kill('SIGTERM');
          }),
      });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc hub exited (${code}) before listening: ${out}${err}`));
    });
  });
}

/** Waits out the end of a rate-limit minute when less than `margin` seconds of it are left. */
export async function awayFromMinuteEdge(margin = 15): Promise<void> {
  const left = 60 - (Math.floor(Date.now() / 1000) % 60);
  if (left < margin) await new Promise((r) => setTimeout(r, left * 1000 + 200));
}

/**
 * A `svc hub --data` folder, already migrated: a copy of the run's PGlite template
 * (global-setup.ts). For tests whose subject is not a hub's first start: a fresh PGlite initdb
 * costs seconds.
 */
export function migratedDataFolder(label: string): string {
  const data = join(mkdtempSync(join(tmpdir(), `svc-${label}-`)), 'hub');
  cpSync(inject('pgliteTemplate'), data, { recursive: true });
  return data;
}
