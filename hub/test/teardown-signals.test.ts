import { describe, expect, inject, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { SERVER, serverReachable } from './support/pg-server.js';
import type { TemplateSources } from './support/global-setup.js';

// Ctrl-C of `npm test` skipped vitest's teardown: a `svc_tpl_*` database, test workers and a
// Chromium stayed behind. The global setup and the browser helper now clean up on a signal, and
// a worker whose test runner went away closes its browser and ends. Real child processes.

const VITE_NODE = fileURLToPath(new URL('../../node_modules/.bin/vite-node', import.meta.url));
const CHILD = fileURLToPath(new URL('./support/signal-child.ts', import.meta.url));
const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
// The child's setup copies this run's templates instead of migrating (seconds each): what is
// tested is that an interrupted run drops what its setup made.
const COPY: TemplateSources = { pglite: inject('pgliteTemplate'), postgres: inject('postgresTemplate') };

function start(
  what: 'setup' | 'browser',
  ipc = false,
): { child: ChildProcess; ready: Promise<Record<string, unknown>>; exited: Promise<number | null> } {
  const child = spawn(VITE_NODE, [CHILD, what], {
    stdio: ['ignore', 'pipe', 'inherit', ...(ipc ? (['ipc'] as const) : [])],
    env: { ...process.env, SVC_TEST_COPY_TEMPLATES: JSON.stringify(COPY) },
  });
  let out = '';
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as Record<string, unknown>);
    });
    child.on('exit', (code) => reject(new Error(`child ended before it was ready (exit ${code})`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))));
  return { child, ready, exited };
}

/** The processes descended from `pid` (Linux /proc). */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // ended meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const [c, pp] of parent) if (pp === p) (out.push(c), walk(c));
  };
  walk(pid);
  return out;
}

const alive = (pid: number): boolean => existsSync(`/proc/${pid}`) && !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

async function templates(): Promise<string[]> {
  const client = new pg.Client({ connectionString: SERVER });
  await client.connect();
  try {
    return (await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'svc_tpl_%'`)).rows.map(
      (r) => r.datname,
    );
  } finally {
    await client.end();
  }
}

const reachable = await serverReachable();

describe('the end of an interrupted test run', () => {
  it.skipIf(!reachable)(
    'drops the PostgreSQL template and the PGlite folder on SIGINT and SIGTERM',
    async () => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) {
        const run = start('setup');
        const provided = (await run.ready) as { postgresTemplate: string; pgliteTemplate: string };
        expect(await templates()).toContain(provided.postgresTemplate);
        expect(existsSync(provided.pgliteTemplate)).toBe(true);
        run.child.kill(signal);
        expect(await run.exited).toBe(signal === 'SIGINT' ? 130 : 143);
        expect(await templates()).not.toContain(provided.postgresTemplate);
        expect(existsSync(provided.pgliteTemplate)).toBe(false);
      }
    },
    120_000,
  );

  it.skipIf(!existsSync(CHROMIUM))(
    'closes the Chromium a worker launched on a signal, and when its test runner goes away',
    async () => {
      for (const how of ['SIGINT', 'SIGTERM', 'disconnect'] as const) {
        const run = start('browser', how === 'disconnect');
        const { pid } = (await run.ready) as { pid: number };
        const browsers = descendants(pid).filter((p) => readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('chrom'));
        expect(browsers.length, how).toBeGreaterThan(0);
        if (how === 'disconnect') run.child.disconnect();
        else run.child.kill(how);
        await run.exited;
        expect(alive(pid), how).toBe(false);
        expect(browsers.filter(alive), how).toEqual([]);
      }
    },
    120_000,
  );
});
