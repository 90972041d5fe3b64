import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LocalStore } from '../../engine/store/local-store.js';
import { stringifyEngram } from '../../engine/store/engram-yaml.js';
import { buildEngram } from '../../engine/ops/learn.js';
import { recall } from '../../engine/ops/recall.js';
import { round } from '../../engine/text.js';
import { syntheticEngrams, syntheticQueries } from '../support/synthetic-engrams.js';
import { median, percentile } from './stats.js';
import { CLI, makeScanSliceDue, timeNode, timeNodeWithPeakRss } from './proc.js';

// `npm run bench -- curve`: how the local engine's costs grow with the store, at 10,000, 50,000
// and 100,000 engrams (--sizes). Each store is seeded by writing its YAML files directly (learning
// 100,000 engrams through the API would take most of the run; `npm run bench` measures learn).
// Per size: in-process recall latency (a first and a second pass over the queries), `svc recall`
// as a process against `node -e 0` (also as the first call after a pause, when the hot path's
// look at the files is due), `svc learn` without a scope (its scope suggestion searches the
// store) against `node -e 0`, and, in a child process, opening the store with index.db deleted
// (a full index build) then a rebuild, with that child's peak RSS.

const QUERIES = 200;
const WARMUP = 20;
const PROCESS_RUNS = 11;

export interface CurvePoint {
  engrams: number;
  recall_p50_ms: number;
  recall_p95_ms: number;
  /** The same queries again: every term's postings already in memory. */
  recall_again_p50_ms: number;
  recall_cli_ratio: number;
  /** `node -e 0`, the median of the runs beside the `svc recall` ones (the ratios' base). */
  node_ms: number;
  /** The same, for the first call after a pause (the hot path's scan of the files is due: store-reconcile.ts). */
  recall_cli_after_pause_ratio: number;
  /** `svc learn` of a new statement without --scope (routed by its neighbours) against `node -e 0`, medians. */
  learn_cli_ratio: number;
  cold_open_ms: number;
  rebuild_ms: number;
  peak_rss_mb: number | null;
}

/** Opens the store (no index.db: a full build), then rebuilds; prints both times as JSON. */
const OPEN_AND_REBUILD = `
const { LocalStore } = await import(${JSON.stringify(new URL('../../engine/store/local-store.js', import.meta.url).href)});
const t0 = performance.now();
const store = await LocalStore.open(process.argv[1], 'full');
const open = performance.now() - t0;
const t1 = performance.now();
await store.rebuild();
const rebuild = performance.now() - t1;
store.close();
process.stdout.write(JSON.stringify({ open, rebuild }) + '\\n');
`;

const log = (text: string): void => void process.stderr.write(`bench: ${text}\n`);

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, sizes: { type: 'string' } } });
  const sizes = (values.sizes ?? '10000,50000,100000').split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--sizes must be positive integers (got ${values.sizes})`);
  const points: CurvePoint[] = [];
  for (const size of sizes) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-curve-'));
    try {
      points.push(await measure(size, join(dir, 'store'), dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const table = formatTable(points);
  if (values.json) {
    process.stderr.write(table);
    process.stdout.write(JSON.stringify({ curve: points }) + '\n');
  } else {
    process.stdout.write(table);
  }
  return 0;
}

async function measure(size: number, root: string, cwd: string): Promise<CurvePoint> {
  log(`${size} engrams: writing the files`);
  (await LocalStore.open(root, 'full')).close();
  const at = new Date().toISOString();
  syntheticEngrams(size).forEach((input, i) => {
    const doc = buildEngram({ ...input, scope: input.scope ?? 'project:bench', visibility: 'private' }, at, {
      scope: 'project:bench',
      session_id: null,
      stored_at: at,
    });
    const id = `ENG-2026-0101-${String(i + 1).padStart(6, '0')}`;
    writeFileSync(join(root, 'engrams', `${id}.yaml`), stringifyEngram({ ...doc, id }));
  });
  rmSync(join(root, 'index.db'), { force: true });

  log(`${size} engrams: full index build and rebuild in a child process`);
  const child = timeNodeWithPeakRss(['--input-type=module', '-e', OPEN_AND_REBUILD, root], { cwd });
  if (child.code !== 0) throw new Error(`index build failed (exit ${child.code}): ${child.stderr}`);
  const built = JSON.parse(child.stdout.trim().split('\n').pop()!) as { open: number; rebuild: number };

  log(`${size} engrams: recall in-process and as svc recall processes`);
  const store = await LocalStore.open(root, 'fast');
  const queries = syntheticQueries(QUERIES);
  for (const q of queries.slice(0, WARMUP)) await recall(store, q, { limit: 10 });
  // Twice: a long-lived process ranks from postings in memory (rank-memory.ts), read from the
  // index the first time a query has a term; the second pass has seen every term once.
  const pass = async (): Promise<number[]> => {
    const ms: number[] = [];
    for (const q of queries) {
      const t = performance.now();
      await recall(store, q, { limit: 10 });
      ms.push(performance.now() - t);
    }
    return ms;
  };
  const ms = await pass();
  const again = await pass();
  store.close();
  const env = { ...process.env, SVC_PATH: root };
  const cli: number[] = [];
  const node: number[] = [];
  // Interleaved after a warm-up, so noise hits both alike.
  for (let i = -2; i < PROCESS_RUNS; i++) {
    const r = timeNode([CLI, 'recall', queries[(i + 2) % queries.length]!, '--json'], { env, cwd });
    if (r.code !== 0 && r.code !== 2) throw new Error(`svc recall failed (exit ${r.code}): ${r.stderr}`);
    const base = timeNode(['-e', '0']).ms;
    if (i < 0) continue;
    cli.push(r.ms);
    node.push(base);
  }
  // After a pause: the scan's interval has passed, as when a prompt follows a minute of reading.
  const paused: number[] = [];
  const pausedNode: number[] = [];
  for (let i = 0; i < PROCESS_RUNS; i++) {
    makeScanSliceDue(root);
    const r = timeNode([CLI, 'recall', queries[i % queries.length]!, '--json'], { env, cwd });
    if (r.code !== 0 && r.code !== 2) throw new Error(`svc recall failed (exit ${r.code}): ${r.stderr}`);
    paused.push(r.ms);
    pausedNode.push(timeNode(['-e', '0']).ms);
  }
  // Learn without a scope: the suggestion's search of the store is part of it.
  const learned: number[] = [];
  const learnNode: number[] = [];
  syntheticEngrams(PROCESS_RUNS + 2, 77).forEach((input, i) => {
    const r = timeNode([CLI, 'learn', `${input.statement} (curve ${i})`, '--json'], { env, cwd });
    if (r.code !== 0) throw new Error(`svc learn failed (exit ${r.code}): ${r.stderr}`);
    const base = timeNode(['-e', '0']).ms;
    if (i < 2) return;
    learned.push(r.ms);
    learnNode.push(base);
  });
  return {
    engrams: size,
    recall_p50_ms: round(percentile(ms, 50), 2),
    recall_p95_ms: round(percentile(ms, 95), 2),
    recall_again_p50_ms: round(percentile(again, 50), 2),
    recall_cli_ratio: round(median(cli) / median(node), 2),
    node_ms: round(median(node), 1),
    recall_cli_after_pause_ratio: round(median(paused) / median(pausedNode), 2),
    learn_cli_ratio: round(median(learned) / median(learnNode), 2),
    cold_open_ms: round(built.open, 0),
    rebuild_ms: round(built.rebuild, 0),
    peak_rss_mb: child.peakRssMb === null ? null : round(child.peakRssMb, 0),
  };
}

function formatTable(points: CurvePoint[]): string {
  const head = `Engine curve (files written directly, then indexed)\n  ${'engrams'.padStart(8)} ${'recall p50'.padStart(11)} ${'p95'.padStart(8)} ${'again p50'.padStart(10)} ${'svc recall / node'.padStart(18)} ${'node -e 0'.padStart(10)} ${'after a pause'.padStart(14)} ${'svc learn / node'.padStart(17)} ${'full build'.padStart(11)} ${'rebuild'.padStart(9)} ${'peak RSS'.padStart(9)}`;
  const rows = points.map(
    (p) =>
      `  ${String(p.engrams).padStart(8)} ${`${p.recall_p50_ms} ms`.padStart(11)} ${`${p.recall_p95_ms} ms`.padStart(8)} ${`${p.recall_again_p50_ms} ms`.padStart(10)} ${`${p.recall_cli_ratio} x`.padStart(18)} ${`${p.node_ms} ms`.padStart(10)} ${`${p.recall_cli_after_pause_ratio} x`.padStart(14)} ${`${p.learn_cli_ratio} x`.padStart(17)} ${`${p.cold_open_ms} ms`.padStart(11)} ${`${p.rebuild_ms} ms`.padStart(9)} ${(p.peak_rss_mb === null ? 'n/a' : `${p.peak_rss_mb} MB`).padStart(9)}`,
  );
  const targets = points.flatMap((p) =>
    p.engrams === 50_000
      ? [
          `  target (50,000): rebuild < 10 s: ${p.rebuild_ms < 10_000 ? 'met' : 'MISSED'}`,
          `  target (50,000): svc recall < 2.5x node -e 0: ${p.recall_cli_ratio < 2.5 ? 'met' : 'MISSED'}`,
        ]
      : p.engrams === 100_000
        ? [
            `  target (100,000): recall p50 <= 2 ms: ${p.recall_p50_ms <= 2 ? 'met' : 'MISSED'}`,
            `  target (100,000): svc recall <= 1.5x node -e 0: ${p.recall_cli_ratio <= 1.5 ? 'met' : 'MISSED'}`,
            `  target (100,000): svc learn < 2x node -e 0 with margin (<= 1.9x): ${p.learn_cli_ratio <= 1.9 ? 'met' : 'MISSED'}`,
          ]
        : [],
  );
  return [head, ...rows, ...targets, ''].join('\n');
}
