// The advisory reranker gate (`svc rerank-eval`): on a sample of this store's own engrams, does a
// reranker order recall's candidates better than plain reciprocal rank fusion? Each sampled
// engram yields a synthetic probe query (probes.ts) whose expected answer is that engram; recall
// ranks its top RERANK_DEPTH candidates, the reranker reorders them, and the rank of the expected
// engram before and after gives MRR, Hit@1, promotions and demotions. The verdict is cached, per
// reranker, beside the models (machine-local, never committed).

import { randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramStore, SearchIndex } from '../backend.js';
import type { EmbedderState } from '../embed/embedder.js';
import { recall, type RecallResult } from './recall.js';
import { invalid, SvcError } from '../errors.js';
import { writeFileDurable } from '../store/durable-write.js';
import { loadReranker, rerank, RERANK_DEPTH, RERANKERS, type RerankerName, type RerankerTier } from '../rerank/reranker.js';
import { sampleProbes } from '../rerank/probes.js';
import { round } from '../text.js';

export type Verdict = 'helpful' | 'harmful' | 'insufficient-data';

/** The gate's rules (documented in the command's help and in the report). */
export const EVAL_THRESHOLDS = {
  /** Fewer probes than this: `insufficient-data`, whatever the numbers say. */
  min_probes: 20,
  /** ΔMRR above this: `helpful`. */
  helpful_delta_mrr: 0.02,
  /** ΔMRR below this: `harmful` (exit code 1). Between the two: `insufficient-data` (no effect shown). */
  harmful_delta_mrr: -0.02,
  /** A cached verdict older than this is stale. */
  max_age_days: 7,
  /** A cached verdict is stale when the live engram count moved by more than this share. */
  max_store_drift: 0.2,
} as const;

export const DEFAULT_SAMPLE = 50;
/** Cache of verdicts, one per reranker: under models/, which the store's .gitignore excludes. */
export const EVAL_CACHE = join('models', 'rerank-eval.json');
const DAY_MS = 24 * 60 * 60 * 1000;

export interface RerankEvalOptions {
  storeRoot: string;
  reranker: RerankerName;
  /** Probes wanted (engrams sampled); default DEFAULT_SAMPLE. */
  sample?: number;
  /** Seed of the sample; default random (reported, so a run can be repeated). */
  seed?: number;
  /** Ignore a cached verdict. */
  force?: boolean;
  now?: Date;
  /** Candidates reranked per probe; default RERANK_DEPTH. */
  depth?: number;
  /** The dense leg, as recall would use it; absent or not ready: BM25 only. */
  embedder?: EmbedderState;
  fast?: boolean;
}

export interface LatencySummary {
  mean: number;
  p50: number;
  p95: number;
  max: number;
}

export interface ProbeMove {
  engram_id: string;
  query: string;
  /** 1-based rank of the expected engram among the candidates; null when recall did not find it. */
  before: number | null;
  after: number | null;
}

export interface RerankEvalReport {
  reranker: RerankerName;
  tier: RerankerTier;
  verdict: Verdict;
  /** Why, in one sentence. */
  reason: string;
  /** The baseline's legs: BM25 only, or BM25 and vectors fused by RRF. */
  mode: 'bm25' | 'hybrid';
  sample: number;
  seed: number;
  depth: number;
  probes: number;
  /** Sampled engrams too short to make a probe from. */
  passed_over: number;
  /** Live (not retired) engrams when the evaluation ran. */
  store_engrams: number;
  baseline: { mrr: number; hit_at_1: number; found: number };
  reranked: { mrr: number; hit_at_1: number };
  delta_mrr: number;
  delta_hit_at_1: number;
  /** Probes whose expected engram the reranker moved up, down, or left in place. */
  promotions: number;
  demotions: number;
  unchanged: number;
  latency_ms: { rerank: LatencySummary; recall: LatencySummary };
  /** The largest moves each way, to see what the reranker does. */
  examples: { promoted: ProbeMove[]; demoted: ProbeMove[] };
  thresholds: typeof EVAL_THRESHOLDS;
  evaluated_at: string;
  /** True when this verdict came from the cache. */
  cached: boolean;
  cache: { file: string; stale_reason?: string };
}

/** The verdict for a number of probes and the change of MRR the reranker made. */
export function verdictFor(probes: number, deltaMrr: number): { verdict: Verdict; reason: string } {
  const t = EVAL_THRESHOLDS;
  if (probes < t.min_probes) {
    return { verdict: 'insufficient-data', reason: `only ${probes} probe(s); at least ${t.min_probes} are needed for a verdict` };
  }
  const d = signed(deltaMrr);
  if (deltaMrr > t.helpful_delta_mrr) return { verdict: 'helpful', reason: `MRR changed by ${d}, above +${t.helpful_delta_mrr}` };
  if (deltaMrr < t.harmful_delta_mrr) return { verdict: 'harmful', reason: `MRR changed by ${d}, below ${t.harmful_delta_mrr}` };
  return {
    verdict: 'insufficient-data',
    reason: `MRR changed by ${d}, within ±${t.helpful_delta_mrr}: no effect shown either way on ${probes} probes`,
  };
}

/**
 * Runs the gate, or returns the cached verdict when it is still fresh (same reranker, mode and
 * depth, and the same sample and seed when they are given; at most 7 days old; live engram count
 * within 20%). Throws when the reranker is not installed or cannot load.
 */
export async function rerankEval(backend: EngramStore & SearchIndex, opts: RerankEvalOptions): Promise<RerankEvalReport> {
  const now = opts.now ?? new Date();
  const sample = opts.sample ?? DEFAULT_SAMPLE;
  const depth = opts.depth ?? RERANK_DEPTH;
  if (!Number.isInteger(sample) || sample < 1) throw invalid('the sample size must be a positive whole number');
  if (opts.seed !== undefined && (!Number.isInteger(opts.seed) || opts.seed < 0)) throw invalid('the seed must be a whole number from 0');
  const embedder = opts.fast ? undefined : opts.embedder;
  const mode = embedder?.state === 'ready' ? 'hybrid' : 'bm25';

  const engrams = await backend.list({});
  const cacheFile = join(opts.storeRoot, EVAL_CACHE);
  const cache = readCache(cacheFile);
  const previous = cache[opts.reranker];
  let staleReason: string | undefined = previous ? undefined : 'no cached verdict';
  if (previous) {
    staleReason = opts.force
      ? 'forced'
      : staleness(previous, { now, mode, depth, sample: opts.sample, seed: opts.seed, size: engrams.length });
    if (!staleReason) return { ...previous, cached: true, cache: { file: cacheFile } };
  }

  const state = await loadReranker(opts.storeRoot, opts.reranker);
  if (state.state === 'unavailable') throw new SvcError('not_found', state.reason);
  const seed = opts.seed ?? randomInt(2 ** 31);
  const { probes, passedOver } = sampleProbes(engrams, sample, seed);

  const moves: ProbeMove[] = [];
  const recallMs: number[] = [];
  const rerankMs: number[] = [];
  let before = { rr: 0, hit1: 0, found: 0 };
  let after = { rr: 0, hit1: 0 };
  for (const probe of probes) {
    const t0 = performance.now();
    const base: RecallResult = await recall(backend, probe.query, { limit: depth, embedder, now });
    const t1 = performance.now();
    const reordered = await rerank(base.hits, probe.query, { reranker: state.reranker, depth });
    rerankMs.push(performance.now() - t1);
    recallMs.push(t1 - t0);
    const rankIn = (hits: Array<{ engram: { id: string } }>): number | null => {
      const i = hits.findIndex((h) => h.engram.id === probe.engram_id);
      return i < 0 ? null : i + 1;
    };
    const move: ProbeMove = { ...probe, before: rankIn(base.hits), after: rankIn(reordered.hits) };
    moves.push(move);
    before = {
      rr: before.rr + rr(move.before),
      hit1: before.hit1 + (move.before === 1 ? 1 : 0),
      found: before.found + (move.before ? 1 : 0),
    };
    after = { rr: after.rr + rr(move.after), hit1: after.hit1 + (move.after === 1 ? 1 : 0) };
  }

  const n = probes.length;
  const mean = (x: number) => (n ? round(x / n, 4) : 0);
  const baseline = { mrr: mean(before.rr), hit_at_1: mean(before.hit1), found: before.found };
  const reranked = { mrr: mean(after.rr), hit_at_1: mean(after.hit1) };
  const deltaMrr = n ? round((after.rr - before.rr) / n, 4) : 0;
  const shift = (m: ProbeMove) => (m.before ?? Infinity) - (m.after ?? Infinity); // > 0: moved up
  const promoted = moves.filter((m) => m.before !== null && shift(m) > 0);
  const demoted = moves.filter((m) => m.before !== null && shift(m) < 0);
  const report: RerankEvalReport = {
    reranker: opts.reranker,
    tier: RERANKERS[opts.reranker].tier,
    ...verdictFor(n, deltaMrr),
    mode,
    sample,
    seed,
    depth,
    probes: n,
    passed_over: passedOver,
    store_engrams: engrams.length,
    baseline,
    reranked,
    delta_mrr: deltaMrr,
    delta_hit_at_1: round(reranked.hit_at_1 - baseline.hit_at_1, 4),
    promotions: promoted.length,
    demotions: demoted.length,
    unchanged: n - promoted.length - demoted.length,
    latency_ms: { rerank: summarize(rerankMs), recall: summarize(recallMs) },
    examples: {
      promoted: [...promoted].sort((a, b) => shift(b) - shift(a)).slice(0, 5),
      demoted: [...demoted].sort((a, b) => shift(a) - shift(b)).slice(0, 5),
    },
    thresholds: EVAL_THRESHOLDS,
    evaluated_at: now.toISOString(),
    cached: false,
    cache: { file: cacheFile, stale_reason: staleReason },
  };
  cache[opts.reranker] = { ...report, cache: { file: cacheFile } };
  mkdirSync(join(opts.storeRoot, 'models'), { recursive: true });
  writeFileDurable(cacheFile, `${JSON.stringify({ version: 1, verdicts: cache }, null, 2)}\n`);
  return report;
}

/** Why a cached verdict cannot be reused, or undefined when it can. */
function staleness(
  prev: RerankEvalReport,
  want: { now: Date; mode: string; depth: number; sample?: number; seed?: number; size: number },
): string | undefined {
  const age = want.now.getTime() - Date.parse(prev.evaluated_at);
  if (!(age >= 0) || age > EVAL_THRESHOLDS.max_age_days * DAY_MS) return `older than ${EVAL_THRESHOLDS.max_age_days} days`;
  const drift = Math.abs(want.size - prev.store_engrams) / Math.max(prev.store_engrams, 1);
  if (drift > EVAL_THRESHOLDS.max_store_drift) {
    return `store size drifted ${Math.round(drift * 100)}% (${prev.store_engrams} -> ${want.size} engrams)`;
  }
  if (prev.mode !== want.mode) return `recall mode changed (${prev.mode} -> ${want.mode})`;
  if (prev.depth !== want.depth) return `depth changed (${prev.depth} -> ${want.depth})`;
  if (want.sample !== undefined && prev.sample !== want.sample) return `sample size changed (${prev.sample} -> ${want.sample})`;
  if (want.seed !== undefined && prev.seed !== want.seed) return `seed changed (${prev.seed} -> ${want.seed})`;
  return undefined;
}

function readCache(file: string): Partial<Record<RerankerName, RerankEvalReport>> {
  if (!existsSync(file)) return {};
  try {
    const data = JSON.parse(readFileSync(file, 'utf8')) as { version?: number; verdicts?: Partial<Record<RerankerName, RerankEvalReport>> };
    return data.version === 1 && data.verdicts && typeof data.verdicts === 'object' ? data.verdicts : {};
  } catch {
    return {}; // an unreadable cache is only a cache: evaluate again
  }
}

const rr = (rank: number | null): number => (rank ? 1 / rank : 0);
const signed = (x: number): string => (x >= 0 ? `+${x.toFixed(4)}` : x.toFixed(4));

function summarize(ms: number[]): LatencySummary {
  if (ms.length === 0) return { mean: 0, p50: 0, p95: 0, max: 0 };
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return {
    mean: round(ms.reduce((a, b) => a + b, 0) / ms.length, 2),
    p50: round(at(0.5), 2),
    p95: round(at(0.95), 2),
    max: round(sorted[sorted.length - 1]!, 2),
  };
}
