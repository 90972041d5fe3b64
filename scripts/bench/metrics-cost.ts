import { parseArgs } from 'node:util';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variedQueries } from '../support/synthetic-engrams.js';
import { seed } from './hub.js';

// What the metrics middleware costs a request: one hub (PGlite, seeded like the hub bench), served
// by two HTTP servers in this process, one with the app's whole middleware and one without the
// metrics middleware (the same hub, the same database), driven in turns with autocannon
// (POST /api/v1/recall/bm25, 8 connections), A B, B A, ..., so drift hits both alike.
// `npm run bench -- metrics-cost [--size 2000] [--seconds 5] [--turns 3]`.

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { size: { type: 'string' }, seconds: { type: 'string' }, turns: { type: 'string' } },
  });
  const size = Number(values.size ?? 2000);
  const seconds = Number(values.seconds ?? 5);
  const turns = Number(values.turns ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'svc-metrics-cost-'));
  try {
    const { apiKey } = await seed(undefined, join(dir, 'hub'), size);
    const [{ openDatabase }, { createHub }, { default: autocannon }] = await Promise.all([
      import('../../hub/data/database.js'),
      import('../../hub/app.js'),
      import('autocannon'),
    ]);
    const db = await openDatabase({ dataDir: join(dir, 'hub') });
    const hub = await createHub({
      db,
      log: () => undefined,
      env: { SVC_HUB_METRICS_TOKEN: 'bench-metrics-token-0123456789', SVC_HUB_LOG_LEVEL: 'silent' },
      rateLimits: { perMinute: 10_000_000, writesPerMinute: 10_000_000 },
    });
    const withMetrics = await listen(hub.app.callback() as never);
    const at = hub.app.middleware.indexOf(hub.metrics.middleware as never);
    if (at < 0) throw new Error('the metrics middleware is not mounted');
    hub.app.middleware.splice(at, 1);
    const without = await listen(hub.app.callback() as never);
    hub.app.middleware.splice(at, 0, hub.metrics.middleware as never);

    const queries = variedQueries(300);
    const load = async (url: string, duration: number) => {
      let n = 0;
      const r = await autocannon({
        url: `${url}/api/v1/recall/bm25`,
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        connections: 8,
        duration,
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => ({ ...req, body: JSON.stringify({ query: queries[n++ % queries.length], limit: 10 }) }),
          },
        ],
      });
      if (r.non2xx || r.errors) throw new Error(`${r.non2xx} non-2xx answers, ${r.errors} errors`);
      return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
    };
    // Warm-up: the first seconds pay for module loading, JIT and the postings cache.
    await load(withMetrics.url, seconds * 2);
    await load(without.url, seconds * 2);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < turns; i++) {
      // Every other turn the other goes first.
      const first = await load(i % 2 ? without.url : withMetrics.url, seconds);
      const second = await load(i % 2 ? withMetrics.url : without.url, seconds);
      const [on, off] = i % 2 ? [second, first] : [first, second];
      a.push(on.rps);
      b.push(off.rps);
      process.stdout.write(
        `turn ${i + 1}: with metrics ${on.rps.toFixed(0)} req/s (p50 ${on.p50} ms, p99 ${on.p99} ms); without ${off.rps.toFixed(0)} req/s (p50 ${off.p50} ms, p99 ${off.p99} ms)\n`,
      );
    }
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const scrape = await fetch(`${withMetrics.url}/metrics`, { headers: { authorization: 'Bearer bench-metrics-token-0123456789' } });
    const text = await scrape.text();
    process.stdout.write(
      `recall/bm25, ${size} engrams, PGlite: with metrics ${mean(a).toFixed(0)} req/s, without ${mean(b).toFixed(0)} req/s (${(((mean(a) - mean(b)) / mean(b)) * 100).toFixed(1)}%); one scrape: ${text.length} bytes, ${text.split('\n').filter((l) => l && !l.startsWith('#')).length} series\n`,
    );
    withMetrics.server.close();
    without.server.close();
    await hub.close();
    await db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return 0;
}
