import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { buildEngram } from '../../engine/ops/learn.js';
import { denseEngrams, denseQueries, syntheticEngrams, variedQueries } from '../support/synthetic-engrams.js';
import { round } from '../../engine/text.js';
import { CLI, timeNode } from './proc.js';
import { median } from './stats.js';

// `npm run bench -- hub`: the hub under load. For each database (PGlite in a data folder, and the
// PostgreSQL server when DATABASE_URL or SVC_TEST_DATABASE_URL reaches one) and each store size,
// seed one organization in bulk, start `svc hub` as its own process, then drive it from this
// process with autocannon over loopback: recall (POST /api/v1/recall/bm25 and /recall), create
// (POST /api/v1/engrams, into the seeded organization and into a new, empty one) and svc_recall
// through MCP over streamable HTTP (POST /mcp), with 300 varied queries (variedQueries: whole
// questions, common words); on PostgreSQL, recall again
// with a second hub process beside the first, half the connections on each; then webhook
// delivery lag: creates at a steady 100 a second, each event timed from its creation in the hub to
// its arrival at a receiver in this process. Rate limits are raised for the run. Hub modules are
// imported lazily, like the dispatcher does, so the other benchmarks never load them.

const DURATION_S = 10;
const CONNECTIONS = 16;
const SEED_BATCH = 500;

export type Corpus = 'varied' | 'dense';

export interface HubFigures {
  database: 'pglite' | 'postgres';
  engrams: number;
  /** varied: the synthetic corpus of many domains; dense: one shared vocabulary, four-word queries of common words. */
  corpus: Corpus;
  /** `node -e 0` on this machine in the same run: the median of the routes' (below), so the row carries its machine. */
  node_baseline_ms: number;
  /**
   * `node -e 0` (median of 5) taken right after each route's load, by route: the machine's speed
   * moves within a run on a shared host, so each figure carries its own.
   */
  node_ms_by_route: Record<string, number>;
  seed_s: number;
  recall_bm25_rps: number;
  recall_bm25_p50_ms: number;
  recall_bm25_p99_ms: number;
  recall_rps: number;
  recall_p50_ms: number;
  recall_p99_ms: number;
  create_rps: number;
  create_p50_ms: number;
  create_p99_ms: number;
  /** Creates into a second, empty organization (filled through the API, as a team's first import is). */
  create_new_org_rps: number;
  create_new_org_p50_ms: number;
  create_new_org_p99_ms: number;
  /** Recall with two hub processes on the database, half the connections each (PostgreSQL only). */
  recall_two_processes_rps: number | null;
  recall_two_processes_p50_ms: number | null;
  recall_two_processes_p99_ms: number | null;
  /** svc_recall through MCP over streamable HTTP, beside REST recall. */
  mcp_recall_rps: number;
  mcp_recall_p50_ms: number;
  mcp_recall_p99_ms: number;
  /** From an event's creation (in the write's transaction) to its arrival at the receiver, at 100 writes/s. */
  webhook_lag_p50_ms: number;
  webhook_lag_p99_ms: number;
  /** The same, with a receiver that never answers subscribed to the same events (its webhook's slowness must stay its own). */
  webhook_lag_slow_beside_p50_ms: number;
  webhook_lag_slow_beside_p99_ms: number;
  webhook_slow_beside_delivered: string;
  /** Events that arrived, of the writes made. */
  webhook_delivered: string;
  errors: number;
}

const log = (text: string): void => void process.stderr.write(`bench hub: ${text}\n`);

/** The routes' names, as the table prints them and as `node_ms_by_route` keys them. */
const ROUTE = {
  bm25: 'recall/bm25',
  recall: 'recall',
  two: 'recall, 2 procs',
  create: 'create',
  createNew: 'create, new org',
  mcp: 'MCP recall',
} as const;
type RouteName = (typeof ROUTE)[keyof typeof ROUTE];

/** `node -e 0`, median of 5, measured right after a route's load so the figure carries its machine's speed. */
function nodeBaseline(): number {
  const runs = Array.from({ length: 5 }, () => timeNode(['-e', '0']).ms).sort((a, b) => a - b);
  return round(runs[2]!, 1);
}

/** A load, then `node -e 0` at once (not during it: timing a process blocks this one, which drives the load). */
async function beside(loaded: Promise<Load>): Promise<Load & { node_ms: number }> {
  const figures = await loaded;
  return { ...figures, node_ms: nodeBaseline() };
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      sizes: { type: 'string' },
      databases: { type: 'string' },
      duration: { type: 'string' },
      corpus: { type: 'string' },
    },
  });
  const corpora = (values.corpus ?? 'varied').split(',') as Corpus[];
  if (corpora.some((c) => c !== 'varied' && c !== 'dense')) throw new Error(`--corpus: varied, dense or both (got ${values.corpus})`);
  const sizes = (values.sizes ?? '1000,10000,100000').split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be positive integers (got ${values.sizes})`);
  const duration = values.duration === undefined ? DURATION_S : Number(values.duration);
  const pgUrl = process.env.DATABASE_URL ?? process.env.SVC_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const wanted = (values.databases ?? 'pglite,postgres').split(',');
  const results: HubFigures[] = [];
  const notes: string[] = [];
  for (const database of wanted) {
    if (database !== 'pglite' && database !== 'postgres') throw new Error(`--databases: unknown database "${database}" (pglite, postgres)`);
    if (database === 'postgres' && !(await reachable(pgUrl))) {
      notes.push(`PostgreSQL at ${redact(pgUrl)} is unreachable: skipped`);
      continue;
    }
    for (const corpus of corpora) for (const size of sizes) results.push(await benchOne(database, size, pgUrl, duration, corpus));
  }
  const table = formatTable(results, notes, duration);
  if (values.json) {
    process.stderr.write(table);
    process.stdout.write(JSON.stringify({ hub: results, notes }) + '\n');
  } else {
    process.stdout.write(table);
  }
  return 0;
}

async function benchOne(
  database: 'pglite' | 'postgres',
  size: number,
  pgUrl: string,
  duration: number,
  corpus: Corpus,
): Promise<HubFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-hub-'));
  const dbName = `svc_bench_${process.pid}_${size}`;
  const url = database === 'postgres' ? withDatabase(pgUrl, dbName) : undefined;
  if (database === 'postgres') await adminQuery(pgUrl, `CREATE DATABASE ${dbName}`);
  let hub: ChildProcess | undefined;
  try {
    log(`${database}, ${size} engrams: seeding`);
    const t0 = performance.now();
    const { apiKey, newOrgKey } = await seed(url, join(dir, 'hub'), size, corpus);
    const seedS = (performance.now() - t0) / 1000;
    log(`  seeded in ${round(seedS, 1)} s; starting svc hub`);
    const started = await startHubProcess(url, join(dir, 'hub'));
    hub = started.child;
    const base = started.url;
    const auth = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const queries = corpus === 'dense' ? denseQueries(300) : variedQueries(300);
    const bodyOf = (i: number) => JSON.stringify({ query: queries[i % queries.length], limit: 10 });

    // Warm-up: the hub's first requests pay for module loading, plan caches and loading the
    // organization's postings (one request first, so the load happens once).
    await warm(base, auth, bodyOf(0));
    await load(`${base}/api/v1/recall/bm25`, auth, bodyOf, 2);
    log('  recall/bm25');
    const bm25 = await beside(load(`${base}/api/v1/recall/bm25`, auth, bodyOf, duration));
    log('  recall');
    const hybrid = await beside(load(`${base}/api/v1/recall`, auth, bodyOf, duration));
    let two: (Load & { node_ms: number }) | null = null;
    if (database === 'postgres') {
      log('  recall with a second hub process');
      const second = await startHubProcess(url, join(dir, 'hub'));
      try {
        await warm(second.url, auth, bodyOf(0));
        await load(`${second.url}/api/v1/recall`, auth, bodyOf, 2);
        two = await beside(loadAll([`${base}/api/v1/recall`, `${second.url}/api/v1/recall`], auth, bodyOf, duration));
      } finally {
        await stop(second.child);
      }
    }
    log('  MCP svc_recall (streamable HTTP)');
    const mcpHeaders = {
      ...auth,
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      'mcp-session-id': await mcpSession(base, auth),
    };
    const mcpBody = (i: number) =>
      JSON.stringify({
        jsonrpc: '2.0',
        id: i + 1,
        method: 'tools/call',
        params: { name: 'svc_recall', arguments: { query: queries[i % queries.length], limit: 10 } },
      });
    await load(`${base}/mcp`, mcpHeaders, mcpBody, 2);
    const mcp = await beside(load(`${base}/mcp`, mcpHeaders, mcpBody, duration));
    log('  create');
    const fresh = syntheticEngrams(50_000, 4242);
    const create = await beside(
      load(
        `${base}/api/v1/engrams`,
        auth,
        (i) =>
          JSON.stringify({
            ...fresh[i % fresh.length],
            statement: `${fresh[i % fresh.length]!.statement} [load ${i}]`,
            scope: 'org:bench',
          }),
        duration,
      ),
    );
    log('  create into a new organization');
    const createNew = await beside(
      load(
        `${base}/api/v1/engrams`,
        { ...auth, authorization: `Bearer ${newOrgKey}` },
        (i) =>
          JSON.stringify({ ...fresh[i % fresh.length], statement: `${fresh[i % fresh.length]!.statement} [new ${i}]`, scope: 'org:fresh' }),
        duration,
      ),
    );
    const byRoute: Record<string, number> = {
      [ROUTE.bm25]: bm25.node_ms,
      [ROUTE.recall]: hybrid.node_ms,
      ...(two ? { [ROUTE.two]: two.node_ms } : {}),
      [ROUTE.create]: create.node_ms,
      [ROUTE.createNew]: createNew.node_ms,
      [ROUTE.mcp]: mcp.node_ms,
    };
    log('  webhook lag at 100 writes/s');
    const lag = await webhookLag(base, auth, duration);
    log('  webhook lag at 100 writes/s, a receiver that never answers beside it');
    const lagSlow = await webhookLag(base, auth, duration, true);
    return {
      database,
      engrams: size,
      corpus,
      node_baseline_ms: median(Object.values(byRoute)),
      node_ms_by_route: byRoute,
      seed_s: round(seedS, 1),
      recall_bm25_rps: round(bm25.rps, 0),
      recall_bm25_p50_ms: bm25.p50,
      recall_bm25_p99_ms: bm25.p99,
      recall_rps: round(hybrid.rps, 0),
      recall_p50_ms: hybrid.p50,
      recall_p99_ms: hybrid.p99,
      recall_two_processes_rps: two && round(two.rps, 0),
      recall_two_processes_p50_ms: two && two.p50,
      recall_two_processes_p99_ms: two && two.p99,
      create_rps: round(create.rps, 0),
      create_p50_ms: create.p50,
      create_p99_ms: create.p99,
      create_new_org_rps: round(createNew.rps, 0),
      create_new_org_p50_ms: createNew.p50,
      create_new_org_p99_ms: createNew.p99,
      mcp_recall_rps: round(mcp.rps, 0),
      mcp_recall_p50_ms: mcp.p50,
      mcp_recall_p99_ms: mcp.p99,
      webhook_lag_p50_ms: lag.p50,
      webhook_lag_p99_ms: lag.p99,
      webhook_delivered: `${lag.delivered}/${lag.written}`,
      webhook_lag_slow_beside_p50_ms: lagSlow.p50,
      webhook_lag_slow_beside_p99_ms: lagSlow.p99,
      webhook_slow_beside_delivered: `${lagSlow.delivered}/${lagSlow.written}`,
      errors: bm25.errors + hybrid.errors + create.errors + createNew.errors + mcp.errors + (two?.errors ?? 0),
    };
  } finally {
    if (hub) await stop(hub);
    if (database === 'postgres') await adminQuery(pgUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Registers a webhook to a receiver here, writes at 100/s for `duration` s, and times each
 * event's delivery. With `slowBeside`, a second webhook of the same organization gets the same
 * events at a receiver that never answers (each attempt runs to the hub's timeout).
 */
async function webhookLag(
  base: string,
  auth: Record<string, string>,
  duration: number,
  slowBeside = false,
): Promise<{ p50: number; p99: number; delivered: number; written: number }> {
  const lags: number[] = [];
  const slow = slowBeside ? createServer(() => undefined) : undefined;
  if (slow) await new Promise<void>((done) => slow.listen(0, '127.0.0.1', done));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { created_at: string };
      lags.push(Date.now() - Date.parse(event.created_at));
      res.end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  try {
    const hook = await fetch(`${base}/api/v1/admin/webhooks`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, events: ['engram.created'] }),
    });
    if (hook.status !== 201) throw new Error(`registering the webhook failed: ${hook.status} ${await hook.text()}`);
    if (slow) {
      const hung = await fetch(`${base}/api/v1/admin/webhooks`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/hook`, events: ['engram.created'] }),
      });
      if (hung.status !== 201) throw new Error(`registering the slow webhook failed: ${hung.status} ${await hung.text()}`);
    }
    const writes: Array<Promise<unknown>> = [];
    const t0 = performance.now();
    for (let i = 0; i < duration * 100; i++) {
      const due = t0 + i * 10;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      writes.push(
        fetch(`${base}/api/v1/engrams`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ statement: `Webhook lag probe ${i} ${Date.now()}`, scope: 'org:bench' }),
        }).then((r) => r.text()),
      );
    }
    await Promise.all(writes);
    const deadline = Date.now() + 30_000;
    while (lags.length < writes.length && Date.now() < deadline) await sleep(50);
    const sorted = [...lags].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
    return { p50: at(0.5), p99: at(0.99), delivered: lags.length, written: writes.length };
  } finally {
    for (const s of [server, slow]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise((done) => s.close(done));
    }
  }
}

/** Creates the organization and its admin, then writes `size` engrams in bulk transactions. */
export async function seed(
  url: string | undefined,
  dataDir: string,
  size: number,
  corpus: Corpus = 'varied',
): Promise<{ apiKey: string; newOrgKey: string }> {
  const [{ openDatabase }, { migrateHub }, { createOrgWithAdmin }, { openOrgBackend }] = await Promise.all([
    import('../../hub/data/database.js'),
    import('../../hub/data/migrate.js'),
    import('../../hub/admin/provision.js'),
    import('../../hub/org-backend/pg-backend.js'),
  ]);
  const db = await openDatabase(url ? { url } : { dataDir });
  try {
    await migrateHub(db);
    const { org, apiKey } = await createOrgWithAdmin(db, 'bench', 'alice');
    const { apiKey: newOrgKey } = await createOrgWithAdmin(db, 'fresh', 'fred');
    const backend = openOrgBackend(db, org, null);
    const inputs = corpus === 'dense' ? denseEngrams(size) : syntheticEngrams(size);
    const now = new Date();
    const at = now.toISOString();
    for (let i = 0; i < inputs.length; i += SEED_BATCH) {
      await backend.write(async (tx) => {
        for (const input of inputs.slice(i, i + SEED_BATCH)) {
          const doc = buildEngram({ ...input, scope: 'org:bench', visibility: 'private' }, at, {
            scope: 'org:bench',
            session_id: null,
            stored_at: at,
          });
          await tx.put({ ...doc, id: await tx.allocateId('ENG', now, doc.scope) });
        }
      });
      if ((i / SEED_BATCH) % 20 === 19) log(`    ${i + SEED_BATCH} written`);
    }
    // What autovacuum does soon after a bulk load: statistics and the visibility map.
    for (const table of ['engrams', 'engram_terms', 'fts_scope_stats']) await db.exec(`VACUUM ANALYZE ${org.schema}.${table}`);
    return { apiKey, newOrgKey };
  } finally {
    await db.close();
  }
}

/** Opens an MCP session over streamable HTTP; resolves to its id. */
async function mcpSession(base: string, auth: Record<string, string>): Promise<string> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...auth, accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const id = res.headers.get('mcp-session-id');
  if (!res.ok || !id) throw new Error(`MCP initialize failed: ${res.status} ${await res.text()}`);
  await res.text();
  return id;
}

/** `svc hub` as its own process on an ephemeral port, rate limits raised; resolves with its URL. */
export function startHubProcess(url: string | undefined, dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_HUB_RATE_LIMIT: '100000000',
    SVC_HUB_WRITE_RATE_LIMIT: '100000000',
    SVC_HUB_MCP_MESSAGE_LIMIT: '100000000',
    // The webhook receiver is in this process, on loopback.
    SVC_HUB_ALLOW_PRIVATE_URLS: '1',
  };
  if (url) env.DATABASE_URL = url;
  else delete env.DATABASE_URL;
  // SVC_BENCH_HUB_NODE_ARGS: Node flags for the hub processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them.
  const nodeArgs = (process.env.SVC_BENCH_HUB_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'hub', '--port', '0', '--host', '127.0.0.1', '--data', dataDir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`svc hub did not print its URL within 60 s: ${out}`)), 60_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      // From here on the hub's log is drained and dropped, as a log collector would take it: kept,
      // it grew without end and was searched again on every chunk, taking the CPU the hub needs.
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.stdout!.resume();
      child.stderr!.resume();
      resolve({ child, url: m[0] });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`svc hub exited (${code}) before listening: ${out}`));
    });
  });
}

export function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

/** One recall, awaited: what the first request of a hub process pays happens outside the measures. */
async function warm(base: string, headers: Record<string, string>, body: string): Promise<void> {
  const res = await fetch(`${base}/api/v1/recall/bm25`, { method: 'POST', headers, body });
  if (!res.ok) throw new Error(`the warm-up recall failed: ${res.status} ${await res.text()}`);
}

/** The same load split over several hub processes at once: throughput summed, latency of the slowest. */
async function loadAll(urls: string[], headers: Record<string, string>, body: (i: number) => string, duration: number): Promise<Load> {
  const each = await Promise.all(urls.map((url) => load(url, headers, body, duration, CONNECTIONS / urls.length)));
  return {
    rps: each.reduce((a, l) => a + l.rps, 0),
    p50: Math.max(...each.map((l) => l.p50)),
    p99: Math.max(...each.map((l) => l.p99)),
    errors: each.reduce((a, l) => a + l.errors, 0),
  };
}

/** autocannon against one POST route, each request with its own body. */
async function load(
  url: string,
  headers: Record<string, string>,
  body: (i: number) => string,
  duration: number,
  connections = CONNECTIONS,
): Promise<Load> {
  const { default: autocannon } = await import('autocannon');
  let n = 0;
  const result = await autocannon({
    url,
    method: 'POST',
    headers,
    connections,
    duration,
    requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, body: body(n++) }) }],
  });
  const non2xx = result.non2xx ?? 0;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors + non2xx };
}

async function reachable(url: string): Promise<boolean> {
  try {
    await adminQuery(url, 'SELECT 1');
    return true;
  } catch {
    return false;
  }
}

export async function adminQuery(url: string, sql: string): Promise<void> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

const redact = (url: string): string => url.replace(/\/\/[^@/]*@/, '//');

/** Where a target line says which machine it was judged on: the `node -e 0` of its routes. */
const at = (r: HubFigures, ...routes: RouteName[]): string =>
  ` (node -e 0: ${routes.map((k) => `${r.node_ms_by_route[k]} ms`).join(', ')})`;

function formatTable(rows: HubFigures[], notes: string[], duration: number): string {
  const nodes = rows.flatMap((r) => Object.values(r.node_ms_by_route));
  const range = nodes.length ? `${Math.min(...nodes)} to ${Math.max(...nodes)} ms` : 'not measured';
  const head =
    `Hub benchmark: autocannon, ${CONNECTIONS} connections, ${duration} s per route, from a separate process on loopback\n` +
    `  (node -e 0 here: ${range}; each row's is taken right after its load)`;
  const cols = `  ${'database'.padEnd(9)} ${'corpus'.padEnd(7)} ${'engrams'.padStart(8)}  ${'route'.padEnd(16)} ${'req/s'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'node -e 0'.padStart(10)}`;
  const lines = rows.flatMap((r) =>
    [
      [ROUTE.bm25, r.recall_bm25_rps, r.recall_bm25_p50_ms, r.recall_bm25_p99_ms],
      [ROUTE.recall, r.recall_rps, r.recall_p50_ms, r.recall_p99_ms],
      ...(r.recall_two_processes_rps === null
        ? []
        : [[ROUTE.two, r.recall_two_processes_rps, r.recall_two_processes_p50_ms, r.recall_two_processes_p99_ms]]),
      [ROUTE.create, r.create_rps, r.create_p50_ms, r.create_p99_ms],
      [ROUTE.createNew, r.create_new_org_rps, r.create_new_org_p50_ms, r.create_new_org_p99_ms],
      [ROUTE.mcp, r.mcp_recall_rps, r.mcp_recall_p50_ms, r.mcp_recall_p99_ms],
    ].map(
      ([route, rps, p50, p99]) =>
        `  ${r.database.padEnd(9)} ${r.corpus.padEnd(7)} ${String(r.engrams).padStart(8)}  ${String(route).padEnd(16)} ${String(rps).padStart(7)} ${String(p50).padStart(7)} ${String(p99).padStart(7)} ${String(r.node_ms_by_route[String(route)] ?? '').padStart(10)}`,
    ),
  );
  const target = rows
    .filter((r) => r.database === 'postgres' && (r.engrams === 10_000 || r.engrams === 100_000))
    .flatMap((r) =>
      r.engrams === 100_000
        ? [
            `  target (PostgreSQL, 100,000): recall >= 150 req/s with p99 < 200 ms: ${r.recall_rps >= 150 && r.recall_p99_ms < 200 ? 'met' : 'MISSED'}${at(r, ROUTE.recall)}`,
          ]
        : [
            `  target (PostgreSQL, 10,000, ${r.corpus}): recall >= 500 req/s with p99 <= 50 ms: ${r.recall_rps >= 500 && r.recall_p99_ms <= 50 ? 'met' : 'MISSED'}${at(r, ROUTE.recall)}`,
            `  target (PostgreSQL, 10,000): create >= 300 req/s, into it and into a new organization: ${r.create_rps >= 300 && r.create_new_org_rps >= 300 ? 'met' : 'MISSED'}${at(r, ROUTE.create, ROUTE.createNew)}`,
            `  target: MCP recall p50 within 1.3x of REST recall's (${round(r.mcp_recall_p50_ms / Math.max(r.recall_p50_ms, 0.01), 2)}x): ${r.mcp_recall_p50_ms <= 1.3 * r.recall_p50_ms ? 'met' : 'MISSED'}`,
          ],
    );
  const lags = rows.map(
    (r) =>
      `  ${r.database} ${r.engrams}: webhook lag at 100 writes/s p50 ${r.webhook_lag_p50_ms} ms, p99 ${r.webhook_lag_p99_ms} ms (${r.webhook_delivered} delivered); ` +
      `beside a receiver that never answers p50 ${r.webhook_lag_slow_beside_p50_ms} ms, p99 ${r.webhook_lag_slow_beside_p99_ms} ms (${r.webhook_slow_beside_delivered})`,
  );
  const errors = rows.filter((r) => r.errors > 0).map((r) => `  note: ${r.database} ${r.engrams}: ${r.errors} failed or non-2xx requests`);
  return [head, cols, ...lines, ...lags, ...target, ...errors, ...notes.map((n) => `  note: ${n}`), ''].join('\n');
}
