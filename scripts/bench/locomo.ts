import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { LocalStore } from '../../engine/store/local-store.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { loadEmbedder } from '../../engine/embed/fastembed-embedder.js';
import { modelFolder, selectedModel } from '../../engine/embed/model-layout.js';
import type { EmbedderState } from '../../engine/embed/embedder.js';
import { learn } from '../../engine/ops/learn.js';
import { recall } from '../../engine/ops/recall.js';
import { systemContext } from '../../engine/ops/context.js';
import { endSession, startSession } from '../../engine/ops/sessions.js';
import { round } from '../../engine/text.js';
import { percentile } from './stats.js';
import { CLI } from './proc.js';

// `npm run bench -- locomo FILE... [--fast] [--mcp] [--json]`: retrieval quality on LoCoMo
// conversations (protocol in DESIGN.md, Benchmarks). Hybrid runs when the embedding model is in
// the user's store (models/ under SVC_PATH or ~/.svc). Per file a fresh temp store; every turn of
// every `session_N` is learned as one engram "<speaker>: <text>[ [image: <caption>]]" with its
// dia_id as source; every qa item of category 1-4 with evidence is a query, recall(question,
// limit 10). Each `session_N` is learned inside one svc session, as an agent writes its
// memories, so the turns it learns one after another get temporal associations. `--mcp` does
// all of it through `svc mcp` over stdio, as outside testers measure it, instead of the engine
// in this process.

const LIMIT = 10;

/** LoCoMo's categories (category 5, adversarial, has no answer and is not queried). */
const CATEGORY_NAMES: Record<string, string> = {
  '1': 'multi-hop',
  '2': 'temporal',
  '3': 'open-domain',
  '4': 'single-hop',
};

interface Turn {
  speaker?: string;
  dia_id: string;
  text?: string;
  blip_caption?: string;
}

interface QaItem {
  question: string;
  evidence?: string[];
  category: number | string;
}

interface Conversation {
  qa: QaItem[];
  [key: string]: unknown;
}

/** One scored question. */
export interface Outcome {
  category: string;
  /** 1-based rank of the first relevant hit, or null when none is in the top 10. */
  firstRank: number | null;
  evidence: number;
  evidenceFound: number;
  ms: number;
}

export interface LocomoFigures {
  r1: number;
  r5: number;
  r10: number;
  ev_r10: number;
  mrr: number;
  p50_ms: number;
  p95_ms: number;
  questions: number;
}

/** Where the questions are asked: `engine` in this process, `mcp` through `svc mcp` over stdio. */
export type Through = 'engine' | 'mcp';

export interface LocomoReport {
  mode: 'fast' | 'hybrid';
  through: Through;
  questions: number;
  overall: Omit<LocomoFigures, 'questions'>;
  by_category: Record<string, Omit<LocomoFigures, 'questions'>>;
}

const log = (text: string): void => void process.stderr.write(`locomo: ${text}\n`);

/** Splits `"D8:6; D9:17"` entries and repairs `D:11:26` to `D11:26`. */
export function normalizeEvidence(evidence: readonly string[] | undefined): string[] {
  const ids: string[] = [];
  for (const entry of evidence ?? []) {
    for (const part of String(entry).split(';')) {
      const id = part.trim().replace(/^D:(\d)/, 'D$1');
      if (id && !ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

/** The statement of one turn, as the protocol says. */
export function turnStatement(turn: Turn): string {
  const caption = turn.blip_caption?.trim();
  return `${turn.speaker ?? ''}: ${turn.text ?? ''}${caption ? ` [image: ${caption}]` : ''}`;
}

function sessionsOf(conv: Conversation): Turn[][] {
  return Object.keys(conv)
    .map((k) => /^session_(\d+)$/.exec(k))
    .filter((m): m is RegExpExecArray => m !== null && Array.isArray(conv[m[0]]))
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((m) => conv[m[0]] as Turn[]);
}

/** Links the selected model from the user's store (`SVC_PATH` or ~/.svc) into `storeRoot`; false when it is not there. */
function linkModel(storeRoot: string): boolean {
  const model = selectedModel();
  const source = modelFolder(resolveStoreRoot(), model);
  if (!existsSync(source)) return false;
  mkdirSync(join(storeRoot, 'models'), { recursive: true });
  symlinkSync(source, modelFolder(storeRoot, model), 'dir');
  return true;
}

/** Where a conversation is learned and asked: this process's engine, or `svc mcp` over stdio. */
interface Memory {
  /** Learns one `session_N` inside one svc session, turn by turn; the engram id of each turn. */
  learnSession(turns: Turn[]): Promise<string[]>;
  /** Called once everything is learned, before the first question. */
  ready(): Promise<void>;
  recall(question: string): Promise<{ ids: string[]; vector: boolean }>;
  close(): Promise<void>;
}

/** The engine in this process, as an agent's own process would use it. */
async function engineMemory(root: string, fast: boolean): Promise<Memory> {
  const store = await LocalStore.open(root);
  let embedder: EmbedderState | undefined;
  return {
    async learnSession(turns) {
      const { session } = await startSession(store, { agent: 'locomo', fast: true }, systemContext);
      const inSession = { ...systemContext, sessionId: session.id };
      const ids: string[] = [];
      for (const turn of turns)
        ids.push((await learn(store, { statement: turnStatement(turn), source: turn.dia_id }, inSession)).engram.id);
      await endSession(store, session.id, {}, systemContext);
      return ids;
    },
    async ready() {
      // Hybrid needs a model on disk: link the user's model folder into this throw-away store
      // and embed everything before timing queries.
      if (fast) return;
      linkModel(root);
      embedder = await loadEmbedder(root, { download: false, progress: false });
      if (embedder.state === 'ready') await store.embedPending(embedder.embedder);
    },
    async recall(question) {
      const res = await recall(store, question, { limit: LIMIT, fast, embedder });
      return { ids: res.hits.map((h) => h.engram.id), vector: res.legs.vector === 'ran' };
    },
    async close() {
      store.close();
    },
  };
}

/**
 * `svc mcp` as its own process, driven by the SDK's client over stdio, as an agent host drives
 * it: svc_session_start, svc_learn of each turn in that session, svc_session_end, then
 * svc_recall. Its first hybrid question also embeds the store.
 */
async function mcpMemory(root: string, fast: boolean, cli: string): Promise<Memory> {
  const [{ Client }, { StdioClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
  ]);
  const env = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined));
  // As in this process, the model is never downloaded: without one, the vector leg is off.
  if (!fast && !linkModel(root)) env.SVC_EMBED = 'off';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp'],
    env: { ...env, SVC_PATH: root },
    cwd: dirname(root),
    stderr: 'ignore',
  });
  const client = new Client({ name: 'svc-bench-locomo', version: '1' });
  await client.connect(transport);
  const call = async <T>(name: string, args: Record<string, unknown>): Promise<T> => {
    const r = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean;
      content: Array<{ text?: string }>;
      structuredContent?: unknown;
    };
    if (r.isError) throw new Error(`${name}: ${r.content[0]?.text ?? 'failed'}`);
    return r.structuredContent as T;
  };
  return {
    async learnSession(turns) {
      const { session } = await call<{ session: { id: string } }>('svc_session_start', { agent: 'locomo', fast: true });
      const ids: string[] = [];
      for (const turn of turns) {
        ids.push(
          (await call<{ id: string }>('svc_learn', { statement: turnStatement(turn), source: turn.dia_id, session: session.id })).id,
        );
      }
      await call('svc_session_end', { session: session.id });
      return ids;
    },
    async ready() {},
    async recall(question) {
      const r = await call<{ results: Array<{ id: string }>; legs: { vector: string } }>('svc_recall', {
        query: question,
        limit: LIMIT,
        fast,
      });
      return { ids: r.results.map((h) => h.id), vector: r.legs.vector === 'ran' };
    },
    async close() {
      await client.close();
    },
  };
}

export interface ConversationOptions {
  fast: boolean;
  through: Through;
  /** `svc` for `through: 'mcp'` (default: the build's). */
  cli?: string;
}

/** One conversation learned into a fresh store and asked its questions; `modes` gets which legs ran. */
export async function runConversation(
  file: string,
  { fast, through, cli = CLI }: ConversationOptions,
  modes: Set<string>,
): Promise<{ outcomes: Outcome[]; turns: number; engrams: number; skipped: number; learnMs: number }> {
  const conv = JSON.parse(readFileSync(file, 'utf8')) as Conversation;
  const dir = mkdtempSync(join(tmpdir(), 'svc-locomo-'));
  const outcomes: Outcome[] = [];
  let skipped = 0;
  try {
    const root = join(dir, 'store');
    const memory = through === 'mcp' ? await mcpMemory(root, fast, cli) : await engineMemory(root, fast);
    try {
      const engramOf = new Map<string, string>();
      const learnStart = performance.now();
      let turns = 0;
      for (const session of sessionsOf(conv)) {
        const ids = await memory.learnSession(session);
        session.forEach((turn, i) => engramOf.set(turn.dia_id, ids[i]!));
        turns += session.length;
      }
      const learnMs = performance.now() - learnStart;
      await memory.ready();
      for (const qa of conv.qa) {
        const category = String(qa.category);
        if (category === '5') continue;
        const evidence = normalizeEvidence(qa.evidence);
        if (evidence.length === 0) {
          skipped += 1;
          continue;
        }
        const t0 = performance.now();
        const res = await memory.recall(qa.question);
        const ms = performance.now() - t0;
        modes.add(res.vector ? 'hybrid' : 'fast');

        const ranked = res.ids.slice(0, LIMIT);
        const relevant = new Set(evidence.map((d) => engramOf.get(d)).filter((id): id is string => id !== undefined));
        const idx = ranked.findIndex((id) => relevant.has(id));
        const top = new Set(ranked);
        const evidenceFound = evidence.filter((d) => {
          const id = engramOf.get(d);
          return id !== undefined && top.has(id);
        }).length;
        outcomes.push({ category, firstRank: idx < 0 ? null : idx + 1, evidence: evidence.length, evidenceFound, ms });
      }
      return { outcomes, turns, engrams: new Set(engramOf.values()).size, skipped, learnMs };
    } finally {
      await memory.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function summarize(outcomes: readonly Outcome[]): LocomoFigures {
  const n = outcomes.length;
  const hitAt = (k: number): number => outcomes.filter((o) => o.firstRank !== null && o.firstRank <= k).length;
  const pct = (x: number, of: number): number => (of === 0 ? 0 : round((100 * x) / of, 1));
  const evidence = outcomes.reduce((a, o) => a + o.evidence, 0);
  const found = outcomes.reduce((a, o) => a + o.evidenceFound, 0);
  const mrr = n === 0 ? 0 : outcomes.reduce((a, o) => a + (o.firstRank ? 1 / o.firstRank : 0), 0) / n;
  const ms = outcomes.map((o) => o.ms);
  return {
    r1: pct(hitAt(1), n),
    r5: pct(hitAt(5), n),
    r10: pct(hitAt(10), n),
    ev_r10: pct(found, evidence),
    mrr: round(mrr, 3),
    p50_ms: n === 0 ? 0 : round(percentile(ms, 50), 2),
    p95_ms: n === 0 ? 0 : round(percentile(ms, 95), 2),
    questions: n,
  };
}

function formatTable(report: LocomoReport, rows: Array<[string, LocomoFigures]>, notes: string[]): string {
  const head = ['', 'n', 'R@1', 'R@5', 'R@10', 'evR@10', 'MRR', 'p50 ms', 'p95 ms'];
  const body = rows.map(([label, f]) => [
    label,
    String(f.questions),
    f.r1.toFixed(1),
    f.r5.toFixed(1),
    f.r10.toFixed(1),
    f.ev_r10.toFixed(1),
    f.mrr.toFixed(3),
    f.p50_ms.toFixed(2),
    f.p95_ms.toFixed(2),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const where = report.through === 'mcp' ? ', through svc mcp' : '';
  const out = [`LoCoMo retrieval (mode: ${report.mode}${where}, limit ${LIMIT}, ${report.questions} questions)`, line(head)];
  for (const r of body) out.push(line(r));
  for (const n of notes) out.push(`  ${n}`);
  return out.join('\n') + '\n';
}

export async function runLocomo(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { fast: { type: 'boolean' }, mcp: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  if (positionals.length === 0) throw new Error('usage: locomo FILE... [--fast] [--mcp] [--json]');
  const fast = values.fast === true;
  const through: Through = values.mcp ? 'mcp' : 'engine';

  const all: Outcome[] = [];
  const modes = new Set<string>();
  const notes: string[] = [];
  for (const file of positionals) {
    const r = await runConversation(file, { fast, through }, modes);
    all.push(...r.outcomes);
    const f = summarize(r.outcomes);
    const line =
      `${basename(file)}: ${r.turns} turns -> ${r.engrams} engrams (learn ${round(r.learnMs / 1000, 1)} s), ` +
      `${r.outcomes.length} questions (${r.skipped} without evidence skipped), R@10 ${f.r10.toFixed(1)}, MRR ${f.mrr.toFixed(3)}`;
    log(line);
    notes.push(line);
  }
  if (!fast && modes.size > 1) notes.push('warning: the vector leg ran for some queries only; reported as hybrid');

  const categories = [...new Set(all.map((o) => o.category))].sort((a, b) => Number(a) - Number(b));
  const overall = summarize(all);
  const byCategory = categories.map((c) => [c, summarize(all.filter((o) => o.category === c))] as const);
  const strip = ({ questions: _q, ...rest }: LocomoFigures): Omit<LocomoFigures, 'questions'> => rest;
  const report: LocomoReport = {
    mode: fast ? 'fast' : modes.has('hybrid') ? 'hybrid' : 'fast',
    through,
    questions: overall.questions,
    overall: strip(overall),
    by_category: Object.fromEntries(byCategory.map(([c, f]) => [c, strip(f)])),
  };
  if (!fast && report.mode === 'fast') notes.push('note: the vector leg did not run: these are BM25-only figures');

  const rows: Array<[string, LocomoFigures]> = [
    ...byCategory.map(([c, f]) => [`${c} ${CATEGORY_NAMES[c] ?? ''}`.trim(), f] as [string, LocomoFigures]),
    ['overall', overall],
  ];
  const table = formatTable(report, rows, notes);
  if (values.json) {
    process.stderr.write(table);
    process.stdout.write(JSON.stringify(report) + '\n');
  } else {
    process.stdout.write(table);
  }
}

/** The entry `scripts/bench/run.ts` expects of a benchmark module. */
export async function run(argv: string[]): Promise<number> {
  await runLocomo(argv);
  return 0;
}
