import { execFile } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { round } from '../../engine/text.js';
import { seed } from './hub.js';

// The cost of the hub's access log: recall (POST /api/v1/recall) req/s on one seeded PGlite hub
// whose log level flips between info (a JSON line per request, to a file as in production) and
// warn (no access line) every window, in one process, so the machine's drift hits both alike.
// The load comes from autocannon in its own process.
// `npm run bench -- log-cost [--size 1000] [--window 3] [--windows 12]`.

const log = (text: string): void => void process.stderr.write(`bench log-cost: ${text}\n`);
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { size: { type: 'string' }, window: { type: 'string' }, windows: { type: 'string' } },
  });
  const size = Number(values.size ?? 1000);
  const window = Number(values.window ?? 3);
  const windows = Number(values.windows ?? 12);
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-logs-'));
  const logFile = join(dir, 'hub.log');
  const fd = openSync(logFile, 'a');
  const [{ openDatabase }, { startHub }, { createLogger }] = await Promise.all([
    import('../../hub/data/database.js'),
    import('../../hub/start.js'),
    import('../../hub/observe/logger.js'),
  ]);
  try {
    log(`seeding ${size} engrams`);
    const { apiKey } = await seed(undefined, join(dir, 'hub'), size);
    const db = await openDatabase({ dataDir: join(dir, 'hub') });
    const logger = createLogger({ level: 'info', fd });
    const running = await startHub({ db, logger, rateLimits: { perMinute: 100_000_000, writesPerMinute: 100_000_000 } });
    const url = `${running.url}/api/v1/recall`;
    const headers = ['-H', `authorization=Bearer ${apiKey}`, '-H', 'content-type=application/json'];
    const body = JSON.stringify({ query: 'how do we deploy the api service', limit: 10 });
    const cannon = createRequire(import.meta.url).resolve('autocannon/autocannon.js');
    const figures: Record<string, number[]> = { info: [], warn: [] };
    try {
      for (let i = 0; i < 20; i++)
        await (
          await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body })
        ).text();
      for (let w = 0; w < windows; w++) {
        // info, warn, warn, info, ...: each level goes first as often as second.
        const level = [0, 3].includes(w % 4) ? 'info' : 'warn';
        (logger as unknown as { level: string }).level = level;
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [cannon, '-c', '10', '-d', String(window), '-m', 'POST', ...headers, '-b', body, '-j', url],
          { maxBuffer: 1 << 24 },
        );
        const r = JSON.parse(stdout) as { requests: { average: number }; errors: number; non2xx: number };
        if (r.errors || r.non2xx) throw new Error(`${r.errors} errors, ${r.non2xx} non-2xx answers`);
        figures[level]!.push(r.requests.average);
        log(`window ${w + 1}, level ${level}: ${round(r.requests.average, 0)} req/s`);
      }
    } finally {
      await running.close();
      await db.close();
    }
    const info = median(figures.info!);
    const warn = median(figures.warn!);
    process.stdout.write(
      `recall req/s (median of ${windows / 2} windows of ${window} s each), ${size} engrams, PGlite: with the access log ${round(info, 0)}, ` +
        `without ${round(warn, 0)} (${round((100 * (warn - info)) / warn, 1)}%); log written: ${round(statSync(logFile).size / 1024, 0)} KiB\n`,
    );
    return 0;
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}
