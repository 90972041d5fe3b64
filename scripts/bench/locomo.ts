import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
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

// `npm run bench -- locomo FILE... [--fast] [--json]`: retrieval quality on LoCoMo conversations.
// Hybrid runs when the embedding model is in the user's store (models/ under SVC_PATH or ~/.svc).
// (protocol in DESIGN.md, Benchmarks). Per file a fresh temp store; every turn of every
// `session_N` is learned as one engram "<speaker>: <text>[ [image: <caption>]]" with its dia_id
// as source; every qa item of category 1-4 with evidence is a query, recall(question, limit 10).
// Each `session_N` is learned inside one svc session, as an agent writes its memories, so the
// turns it learns one after another get temporal associations.

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
interface Outcome {
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

export interface LocomoReport {
  mode: 'fast' | 'hybrid';
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

/** The selected model from the user's store (`SVC_PATH` or ~/.svc), linked into `storeRoot`. */
async function modelFor(storeRoot: string): Promise<EmbedderState> {
  const model = selectedModel();
  const source = modelFolder(resolveStoreRoot(), model);
  if (existsSync(source)) {
    mkdirSync(join(storeRoot, 'models'), { recursive: true });
    symlinkSync(source, modelFolder(storeRoot, model), 'dir');
  }
  return loadEmbedder(storeRoot, { download: false, progress: false });
}

async function runConversation(
  file: string,
  fast: boolean,
  modes: Set<string>,
): Promise<{ outcomes: Outcome[]; turns: number; engrams: number; skipped: number; learnMs: number }> {
  const conv = JSON.parse(readFileSync(file, 'utf8')) as Conversation;
  const dir = mkdtempSync(join(tmpdir(), 'svc-locomo-'));
  const outcomes: Outcome[] = [];
  let skipped = 0;
  try {
    const store = await LocalStore.open(join(dir, 'store'));
    try {
      const engramOf = new Map<string, string>();
      const learnStart = performance.now();
      let turns = 0;
      for (const session of sessionsOf(conv)) {
        const { session: svcSession } = await startSession(store, { agent: 'locomo', fast: true }, systemContext);
        const inSession = { ...systemContext, sessionId: svcSession.id };
        for (const turn of session) {
          const result = await learn(store, { statement: turnStatement(turn), source: turn.dia_id }, inSession);
          engramOf.set(turn.dia_id, result.engram.id);
          turns += 1;
        }
        await endSession(store, svcSession.id, {}, systemContext);
      }
      const learnMs = performance.now() - learnStart;

      // Hybrid needs a model on disk: link the user's model folder into this throw-away store
      // and embed everything before timing queries.
      const embedder = fast ? undefined : await modelFor(join(dir, 'store'));
      if (embedder?.state === 'ready') await store.embedPending(embedder.embedder);
      const opts = { limit: LIMIT, fast, embedder };
      for (const qa of conv.qa) {
        const category = String(qa.category);
        if (category === '5') continue;
        const evidence = normalizeEvidence(qa.evidence);
        if (evidence.length === 0) {
          skipped += 1;
          continue;
        }
        const t0 = performance.now();
        const res = await recall(store, qa.question, opts);
        const ms = performance.now() - t0;
        modes.add(res.legs.vector === 'ran' ? 'hybrid' : 'fast');

        const ranked = res.hits.slice(0, LIMIT).map((h) => h.engram.id);
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
      store.close();
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
  const out = [`LoCoMo retrieval (mode: ${report.mode}, limit ${LIMIT}, ${report.questions} questions)`, line(head)];
  for (const r of body) out.push(line(r));
  for (const n of notes) out.push(`  ${n}`);
  return out.join('\n') + '\n';
}

export async function runLocomo(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { fast: { type: 'boolean' }, json: { type: 'boolean' } },
  });
  if (positionals.length === 0) throw new Error('usage: locomo FILE... [--fast] [--json]');
  const fast = values.fast === true;

  const all: Outcome[] = [];
  const modes = new Set<string>();
  const notes: string[] = [];
  for (const file of positionals) {
    const r = await runConversation(file, fast, modes);
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
