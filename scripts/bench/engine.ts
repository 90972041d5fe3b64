import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn, type LearnInput } from '../../engine/ops/learn.js';
import { recall } from '../../engine/ops/recall.js';
import { systemContext } from '../../engine/ops/context.js';
import { syntheticEngrams, syntheticQueries } from '../support/synthetic-engrams.js';
import { round } from '../../engine/text.js';
import { median, percentile } from './stats.js';
import { CLI, nodePeakRssMb, timeNode } from './proc.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';
import { loadEmbedder } from '../../engine/embed/fastembed-embedder.js';
import { modelFolder } from '../../engine/embed/model-layout.js';

// `npm run bench` (no subcommand): the engine benchmark. Seeds a temp store with N synthetic
// engrams through the engine API, then measures learn, recall (in-process and as a whole
// `svc recall` process against `node -e 0`), peak RSS, index rebuild and cold open.

const CLI_LEARNS = 100;
const RECALL_QUERIES = 200;
const RECALL_WARMUP = 5;
const PROCESS_RUNS = 15;
const PROCESS_WARMUP = 2;

export interface EngineFigures {
  learn_api_per_s: number;
  learn_cli_per_s: number;
  /** One `svc learn` process against `node -e 0` (the median of each). */
  learn_cli_ratio: number;
  recall_p50_ms: number;
  recall_p95_ms: number;
  /** Hybrid recall with a tiny test model: KNN over all vectors, fusion, and a cheap query embedding. */
  hybrid_tiny_p50_ms: number;
  hybrid_tiny_p95_ms: number;
  /** Embedding the whole store with the tiny model (the catch-up after a model arrives). */
  embed_backlog_ms: number;
  recall_cli_ms: number;
  node_baseline_ms: number;
  /**
   * `svc --version` against `node -e 0`, in the same interleaved runs: the start-up every command
   * pays before its own work (reading and running the bundle). No target: the floor under the
   * ratio targets, which `node -e 0` alone moves from day to day.
   */
  version_cli_ratio: number;
  /** `svc hook-inject` as a whole process on this store (what each prompt pays). */
  hook_inject_ms: number;
  hook_inject_ratio: number;
  /** The same after a pause, when its look at the files is due (as for most prompts): no target. */
  hook_inject_paused_ratio: number;
  /** Spawning `svc mcp` to a completed initialize + tools/list. */
  mcp_ready_ms: number;
  /** mcp_ready_ms against `node -e 0` run beside it. */
  mcp_ready_ratio: number;
  recall_cli_ratio: number;
  peak_rss_mb: number;
  recall_cli_rss_mb: number | null;
  rebuild_ms: number;
  cold_open_ms: number;
  /** `svc browse` in a child process: start to the first frame showing the list, 80×24. */
  tui_first_paint_ms: number;
  /** `svc import --from generic` of 10,000 JSONL rows into a fresh store. */
  import_rows_per_s: number;
  pack_export_1000_ms: number;
  pack_install_1000_ms: number;
  engrams: number;
}

interface Target {
  key: keyof EngineFigures;
  text: string;
  met: (f: EngineFigures) => boolean;
}

const TARGETS: Target[] = [
  { key: 'learn_api_per_s', text: '> 200/s', met: (f) => f.learn_api_per_s > 200 },
  { key: 'recall_p50_ms', text: '< 5 ms', met: (f) => f.recall_p50_ms < 5 },
  { key: 'recall_cli_ratio', text: '< 2.5 x', met: (f) => f.recall_cli_ratio < 2.5 },
  { key: 'rebuild_ms', text: '< 5000 ms', met: (f) => f.rebuild_ms < 5000 },
  { key: 'hook_inject_ratio', text: '< 2.5 x', met: (f) => f.hook_inject_ratio < 2.5 },
  { key: 'learn_cli_ratio', text: '< 2 x', met: (f) => f.learn_cli_ratio < 2 },
  { key: 'mcp_ready_ms', text: '< 1000 ms', met: (f) => f.mcp_ready_ms < 1000 },
  { key: 'mcp_ready_ratio', text: '<= 4 x', met: (f) => f.mcp_ready_ratio <= 4 },
  { key: 'tui_first_paint_ms', text: '< 500 ms', met: (f) => f.tui_first_paint_ms < 500 },
];

/** Run by `node -e` with the store as argv[1]: prints the first-paint milliseconds, timed from process start. */
const FIRST_PAINT_SCRIPT = `
const t0 = performance.timeOrigin;
const { benchFirstPaint } = await import(${JSON.stringify(new URL('../../tui/browse/run.js', import.meta.url).href)});
await benchFirstPaint(process.argv[1]);
process.stdout.write(String(Date.now() - t0) + '\\n');
process.exit(0);
`;

const log = (text: string): void => void process.stderr.write(`bench: ${text}\n`);

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { json: { type: 'boolean' }, engrams: { type: 'string' } } });
  const count = values.engrams === undefined ? 10_000 : Number(values.engrams);
  if (!Number.isInteger(count) || count < 1) throw new Error(`--engrams must be a positive integer (got ${values.engrams})`);

  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  try {
    const { figures, notes } = await engineBench(count, dir);
    const table = formatTable(figures, notes);
    if (values.json) {
      process.stderr.write(table);
      process.stdout.write(JSON.stringify({ engine: figures }) + '\n');
    } else {
      process.stdout.write(table);
    }
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function engineBench(count: number, dir: string): Promise<{ figures: EngineFigures; notes: string[] }> {
  const notes: string[] = [];
  const root = join(dir, 'store');
  const inputs = syntheticEngrams(count);

  // 1. Learn through the engine API: one write transaction (with fsyncs) per engram.
  log(`learning ${count} engrams through the engine API`);
  let store = await LocalStore.open(root, 'full');
  const t0 = performance.now();
  for (let i = 0; i < inputs.length; i++) {
    await learn(store, inputs[i]!, systemContext);
    if ((i + 1) % 1000 === 0) log(`  ${i + 1} learned (${round((i + 1) / ((performance.now() - t0) / 1000), 1)}/s)`);
  }
  const learnApiMs = performance.now() - t0;
  const stored = (await store.stats()).engrams;
  if (stored !== count) throw new Error(`expected ${count} engrams in the store, found ${stored}`);

  // 3. BM25 recall in-process.
  log(`recalling ${RECALL_QUERIES} queries in-process`);
  const queries = syntheticQueries(RECALL_QUERIES);
  for (const q of queries.slice(0, RECALL_WARMUP)) await recall(store, q, { limit: 10 });
  const recallMs: number[] = [];
  const withHits: string[] = [];
  for (const q of queries) {
    const t = performance.now();
    const r = await recall(store, q, { limit: 10 });
    recallMs.push(performance.now() - t);
    if (r.hits.length > 0) withHits.push(q);
  }
  notes.push(`in-process recall: ${withHits.length}/${queries.length} queries had hits`);

  // 3b. Hybrid recall with a tiny model placed in the store: measures the vector leg's KNN and
  // the fusion at this size. A real model adds its query-embedding time (bge-small: not
  // measurable here, no network to fetch it).
  log('hybrid recall with a tiny model');
  const folder = modelFolder(root, 'bge-small-en-v1.5');
  writeTinyModel(folder);
  const dense = await loadEmbedder(root, { download: false, progress: false, env: {} });
  if (dense.state !== 'ready') throw new Error(`tiny model did not load: ${dense.reason}`);
  const te = performance.now();
  await store.embedPending(dense.embedder);
  const embedBacklogMs = performance.now() - te;
  for (const q of queries.slice(0, RECALL_WARMUP)) await recall(store, q, { limit: 10, embedder: dense });
  const hybridMs: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    await recall(store, q, { limit: 10, embedder: dense });
    hybridMs.push(performance.now() - t);
  }
  rmSync(join(root, 'models'), { recursive: true, force: true });

  // 6. Index rebuild, then a cold open with index.db deleted (full rebuild from the YAML files).
  log('rebuilding the index');
  const t1 = performance.now();
  await store.rebuild();
  const rebuildMs = performance.now() - t1;
  store.close();
  for (const f of ['index.db', 'index.db-wal', 'index.db-shm']) rmSync(join(root, f), { force: true });
  log('cold open without index.db');
  const t2 = performance.now();
  store = await LocalStore.open(root, 'full');
  const coldOpenMs = performance.now() - t2;
  store.close();

  // 7. The terminal UI's first paint on this store, in a fresh process (imports included).
  log('timing the terminal UI first paint');
  const paint = timeNode(['--input-type=module', '-e', FIRST_PAINT_SCRIPT, root], { cwd: dir });
  if (paint.code !== 0) throw new Error(`first paint failed (exit ${paint.code}): ${paint.stderr}`);
  const firstPaintMs = Number(paint.stdout.trim());

  // 8. Import of 10,000 JSONL rows, and pack export and install of 1,000 engrams.
  log('importing 10,000 JSONL rows; exporting and installing a 1,000-engram pack');
  const { benchImport } = await import('./import.js');
  const imported = await benchImport(join(dir, 'import'));
  const { benchPacks } = await import('./packs.js');
  const packs = await benchPacks(join(dir, 'packs'));

  // 5. Hooks as the agent host runs them, and the MCP server's start-up (hooks/ owns the MCP probe).
  log('timing svc hook-inject and svc mcp start-up');
  const { benchHooks } = await import('./hooks.js');
  const hooks = await benchHooks(root);

  // 4. `svc recall` as a whole process against `node -e 0`, interleaved so noise hits both.
  log(`timing svc recall and node -e 0 (${PROCESS_RUNS} runs each after ${PROCESS_WARMUP} warm-ups)`);
  const env = { ...process.env, SVC_PATH: root };
  const cliQueries = withHits.length > 0 ? withHits : queries;
  const recallCli = (i: number): number => {
    const r = timeNode([CLI, 'recall', cliQueries[i % cliQueries.length]!, '--json'], { env, cwd: dir });
    if (r.code !== 0 && r.code !== 2) throw new Error(`svc recall failed (exit ${r.code}): ${r.stderr}`);
    return r.ms;
  };
  const baseline = (): number => timeNode(['-e', '0']).ms;
  const warm: number[] = [];
  for (let i = 0; i < PROCESS_WARMUP; i++) {
    warm.push(recallCli(i));
    baseline();
  }
  notes.push(`svc recall warm-up runs: ${warm.map((ms) => `${round(ms, 1)} ms`).join(', ')}`);
  const cliMs: number[] = [];
  const nodeMs: number[] = [];
  const versionMs: number[] = [];
  for (let i = 0; i < PROCESS_RUNS; i++) {
    cliMs.push(recallCli(i));
    nodeMs.push(baseline());
    versionMs.push(timeNode([CLI, '--version'], { env, cwd: dir }).ms);
  }

  // 5. Peak RSS of one `svc recall` child.
  const childRss = nodePeakRssMb([CLI, 'recall', cliQueries[0]!, '--json'], { env, cwd: dir });
  if (childRss === null) notes.push('svc recall peak RSS skipped: /usr/bin/time not found');

  // 2. Learn through the CLI: sequential processes into a second, already initialised store.
  log(`learning ${CLI_LEARNS} engrams through ${CLI_LEARNS} svc learn processes`);
  const root2 = join(dir, 'cli-store');
  (await LocalStore.open(root2, 'full')).close();
  const env2 = { ...process.env, SVC_PATH: root2 };
  let learnCliMs = 0;
  const learnMs: number[] = [];
  for (const input of syntheticEngrams(CLI_LEARNS, 99)) {
    const r = timeNode([CLI, 'learn', ...learnArgs(input), '--json'], { env: env2, cwd: dir });
    if (r.code !== 0) throw new Error(`svc learn failed (exit ${r.code}): ${r.stderr}`);
    learnCliMs += r.ms;
    learnMs.push(r.ms);
  }

  const cli = median(cliMs);
  const node = median(nodeMs);
  const figures: EngineFigures = {
    learn_api_per_s: round(count / (learnApiMs / 1000), 1),
    learn_cli_per_s: round(CLI_LEARNS / (learnCliMs / 1000), 1),
    learn_cli_ratio: round(median(learnMs) / node, 2),
    recall_p50_ms: round(median(recallMs), 3),
    recall_p95_ms: round(percentile(recallMs, 95), 3),
    hook_inject_ms: round(hooks.hook_inject_ms, 1),
    hook_inject_ratio: round(hooks.ratio, 2),
    hook_inject_paused_ratio: hooks.paused_ratio,
    mcp_ready_ms: round(hooks.mcp_ready_ms, 1),
    mcp_ready_ratio: round(hooks.mcp_ready_ratio, 2),
    hybrid_tiny_p50_ms: round(median(hybridMs), 3),
    hybrid_tiny_p95_ms: round(percentile(hybridMs, 95), 3),
    embed_backlog_ms: Math.round(embedBacklogMs),
    recall_cli_ms: round(cli, 1),
    node_baseline_ms: round(node, 1),
    recall_cli_ratio: round(cli / node, 2),
    version_cli_ratio: round(median(versionMs) / node, 2),
    peak_rss_mb: round(process.resourceUsage().maxRSS / 1024, 1),
    recall_cli_rss_mb: childRss === null ? null : round(childRss, 1),
    rebuild_ms: round(rebuildMs, 0),
    cold_open_ms: round(coldOpenMs, 0),
    tui_first_paint_ms: round(firstPaintMs, 1),
    import_rows_per_s: imported.rows_per_s,
    pack_export_1000_ms: round(packs.export_1000_ms, 0),
    pack_install_1000_ms: round(packs.install_1000_ms, 0),
    engrams: count,
  };
  return { figures, notes };
}

function learnArgs(e: LearnInput): string[] {
  const args = [e.statement];
  if (e.type) args.push('--type', e.type);
  if (e.domain) args.push('--domain', e.domain);
  if (e.scope) args.push('--scope', e.scope);
  if (e.tags?.length) args.push('--tags', e.tags.join(','));
  if (e.rationale) args.push('--rationale', e.rationale);
  if (e.source) args.push('--source', e.source);
  return args;
}

const ROWS: Array<[keyof EngineFigures, string, string]> = [
  ['learn_api_per_s', 'learn, engine API (fsync per engram)', 'engrams/s'],
  ['learn_cli_per_s', `learn, ${CLI_LEARNS} svc learn processes`, 'engrams/s'],
  ['learn_cli_ratio', 'svc learn process / node -e 0 (medians)', 'x'],
  ['recall_p50_ms', `recall in-process p50 (${RECALL_QUERIES} queries)`, 'ms'],
  ['recall_p95_ms', 'recall in-process p95', 'ms'],
  ['hybrid_tiny_p50_ms', 'hybrid recall p50 (tiny model)', 'ms'],
  ['hybrid_tiny_p95_ms', 'hybrid recall p95 (tiny model)', 'ms'],
  ['embed_backlog_ms', 'embed whole store (tiny model)', 'ms'],
  ['recall_cli_ms', `svc recall process, median of ${PROCESS_RUNS}`, 'ms'],
  ['node_baseline_ms', `node -e 0, median of ${PROCESS_RUNS}`, 'ms'],
  ['recall_cli_ratio', 'svc recall / node -e 0', 'x'],
  ['version_cli_ratio', 'svc --version / node -e 0 (start-up floor)', 'x'],
  ['hook_inject_ms', 'svc hook-inject process, median', 'ms'],
  ['hook_inject_ratio', 'svc hook-inject / node -e 0', 'x'],
  ['hook_inject_paused_ratio', 'svc hook-inject after a pause / node -e 0', 'x'],
  ['mcp_ready_ms', 'svc mcp spawn to tools/list, median', 'ms'],
  ['mcp_ready_ratio', 'svc mcp spawn to tools/list / node -e 0', 'x'],
  ['peak_rss_mb', 'peak RSS, bench process', 'MB'],
  ['recall_cli_rss_mb', 'peak RSS, svc recall process', 'MB'],
  ['rebuild_ms', 'index rebuild', 'ms'],
  ['cold_open_ms', 'cold open, index.db deleted', 'ms'],
  ['tui_first_paint_ms', 'terminal UI first paint (process)', 'ms'],
  ['import_rows_per_s', 'import of 10,000 JSONL rows', 'rows/s'],
  ['pack_export_1000_ms', 'pack export, 1,000 engrams', 'ms'],
  ['pack_install_1000_ms', 'pack install, 1,000 engrams', 'ms'],
];

function formatTable(f: EngineFigures, notes: string[]): string {
  const lines = ROWS.map(([key, label, unit]) => {
    const target = TARGETS.find((t) => t.key === key);
    const value = f[key] === null ? 'n/a' : `${f[key]} ${unit}`;
    const verdict = target ? `${target.text.padEnd(10)} ${target.met(f) ? 'met' : 'MISSED'}` : '';
    return `  ${label.padEnd(44)} ${value.padStart(16)}   ${verdict}`.trimEnd();
  });
  const head = `Engine benchmark, ${f.engrams} engrams\n  ${'measure'.padEnd(44)} ${'value'.padStart(16)}   target`;
  return [head, ...lines, ...notes.map((n) => `  note: ${n}`), ''].join('\n');
}
