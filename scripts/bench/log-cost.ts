import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { variedQueries } from '../support/synthetic-engrams.js';
import { round } from '../../engine/text.js';
import { CLI } from './proc.js';
import { seed, stop } from './hub.js';

// The cost of the hub's access log: recall (POST /api/v1/recall) req/s on one seeded PGlite hub,
// started in turns with SVC_HUB_LOG_LEVEL=info (a JSON line per request, to a file as in
// production) and =warn (no access lines), same data, same queries, alternating rounds so drift
// hits both alike. `node dist/scripts/bench/log-cost.js [--size 1000] [--duration 5] [--rounds 3]`.

const log = (text: string): void => void process.stderr.write(`bench log-cost: ${text}\n`);

function startHub(dataDir: string, level: string, logFile: string): Promise<{ child: ChildProcess; url: string }> {
  const fd = openSync(logFile, 'a');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_HUB_LOG_LEVEL: level,
    SVC_HUB_RATE_LIMIT: '100000000',
    SVC_HUB_WRITE_RATE_LIMIT: '100000000',
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [CLI, 'hub', '--port', '0', '--data', dataDir], { env, stdio: ['ignore', 'pipe', fd] });
  closeSync(fd);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (m) resolve({ child, url: m[0] });
    });
    child.once('exit', (code) => reject(new Error(`svc hub exited (${code}) before listening: ${out}`)));
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { size: { type: 'string' }, duration: { type: 'string' }, rounds: { type: 'string' } },
  });
  const size = Number(values.size ?? 1000);
  const duration = Number(values.duration ?? 5);
  const rounds = Number(values.rounds ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-logs-'));
  const { default: autocannon } = await import('autocannon');
  try {
    log(`seeding ${size} engrams`);
    const { apiKey } = await seed(undefined, join(dir, 'hub'), size);
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const queries = variedQueries(300);
    const figures: Record<string, number[]> = { info: [], warn: [] };
    for (let r = 0; r < rounds; r++) {
      for (const level of r % 2 === 0 ? ['info', 'warn'] : ['warn', 'info']) {
        const logFile = join(dir, `hub-${level}.log`);
        const hub = await startHub(join(dir, 'hub'), level, logFile);
        try {
          for (let i = 0; i < 20; i++) {
            const res = await fetch(`${hub.url}/api/v1/recall`, {
              method: 'POST',
              headers,
              body: JSON.stringify({ query: queries[i]!, limit: 10 }),
            });
            await res.text();
          }
          let n = 0;
          const result = await autocannon({
            url: `${hub.url}/api/v1/recall`,
            method: 'POST',
            headers,
            connections: 10,
            duration,
            requests: [
              {
                method: 'POST',
                setupRequest: (req) => ({ ...req, body: JSON.stringify({ query: queries[n++ % queries.length]!, limit: 10 }) }),
              },
            ],
          });
          if (result.errors || result.non2xx) throw new Error(`${result.errors} errors, ${result.non2xx} non-2xx answers`);
          figures[level]!.push(result.requests.average);
          log(`round ${r + 1}, SVC_HUB_LOG_LEVEL=${level}: ${round(result.requests.average, 0)} req/s, p50 ${result.latency.p50} ms`);
        } finally {
          await stop(hub.child);
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const info = mean(figures.info!);
    const warn = mean(figures.warn!);
    const bytes = statSync(join(dir, 'hub-info.log')).size;
    process.stdout.write(
      `recall req/s, ${size} engrams, PGlite, ${rounds} rounds of ${duration} s: with the access log ${round(info, 0)}, without ${round(warn, 0)} ` +
        `(${round((100 * (warn - info)) / warn, 1)}% cost); log written: ${round(bytes / 1024, 0)} KiB\n`,
    );
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = await run(process.argv.slice(2));
