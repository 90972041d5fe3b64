// The reranker and its gate against a tiny real cross-encoder the test builds: real tokenizer pair
// encoding, real onnxruntime, no network.

import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { systemContext } from '../ops/context.js';
import { SvcError } from '../errors.js';
import {
  loadReranker,
  parseRerankerName,
  rerank,
  rerankerSetting,
  RERANK_DEPTH,
  rerankerFolder,
  rerankerPresent,
  selectedReranker,
  type Reranker,
} from '../rerank/reranker.js';
import { writeTinyReranker } from '../rerank/tiny-reranker.js';
import { contentWords, sampleProbes, synthesizeProbe, documentFrequencies } from '../rerank/probes.js';
import { EVAL_CACHE, EVAL_THRESHOLDS, rerankEval, verdictFor } from '../ops/rerank-eval.js';
import type { EngramDoc } from '../model/engram-types.js';

const TINY = 'ms-marco-minilm-l6' as const;
const QUALITY = 'bge-reranker-v2-m3' as const;

let root: string;
beforeEach(() => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-rerank-')), 'store');
});
afterEach(() => {
  rmSync(join(root, '..'), { recursive: true, force: true });
});

async function ready(name: typeof TINY | typeof QUALITY = TINY): Promise<Reranker> {
  const state = await loadReranker(root, name);
  if (state.state !== 'ready') throw new Error(state.reason);
  return state.reranker;
}

/**
 * A store where plain BM25 misranks: 25 groups, each one long engram holding six rare words and
 * three four-word engrams holding four of them each. The probe for the long engram (its five
 * rarest words) matches a short one on four words, which BM25's length normalisation rates
 * above five matches in a long engram; a cross-encoder that checks which engram covers the whole
 * query puts the long one first.
 */
const SYL_C = 'bdgkmnprtv';
const SYL_V = 'aiou';
function pseudoWords(count: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const w = SYL_C[i % 10]! + SYL_V[Math.floor(i / 10) % 4]! + SYL_C[Math.floor(i / 40) % 10]! + SYL_V[Math.floor(i / 400) % 4]! + 'k';
    out.push(`${w}${'zx'[i % 2]}`);
  }
  return out;
}
const GROUPS = 25;
const WORDS = pseudoWords(GROUPS * 6);

function groupStatements(g: number): { target: string; distractors: string[] } {
  const w = WORDS.slice(g * 6, g * 6 + 6);
  return {
    target: `Remember that ${w[0]} and ${w[1]} go with ${w[2]}, ${w[3]}, ${w[4]} and ${w[5]} in the plan`,
    distractors: [`${w[0]} ${w[1]} ${w[2]} ${w[3]}`, `${w[2]} ${w[3]} ${w[4]} ${w[5]}`, `${w[4]} ${w[5]} ${w[0]} ${w[1]}`],
  };
}

async function fillStore(store: LocalStore, groups = GROUPS): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (let g = 0; g < groups; g++) {
    const { target, distractors } = groupStatements(g);
    for (const statement of [target, ...distractors]) {
      const { engram } = await learn(store, { statement }, systemContext);
      ids.set(statement, engram.id);
    }
  }
  return ids;
}

describe('the tiny cross-encoder through the real loading code', () => {
  it('lives in a folder under models/, is reported missing with where to put it, and loads when present', async () => {
    expect(rerankerFolder(root, TINY)).toBe(join(root, 'models', 'reranker-ms-marco-minilm-l6'));
    expect(rerankerFolder(root, QUALITY)).toBe(join(root, 'models', 'reranker-bge-reranker-v2-m3'));
    expect(rerankerPresent(root, TINY)).toBe(false);
    const missing = await loadReranker(root, QUALITY);
    expect(missing.state).toBe('unavailable');
    expect(missing.state === 'unavailable' && missing.reason).toMatch(
      /not installed: place model\.onnx and tokenizer\.json in .*models\/reranker-bge-reranker-v2-m3 \(an ONNX export of BAAI\/bge-reranker-v2-m3/,
    );

    writeTinyReranker(rerankerFolder(root, TINY));
    expect(rerankerPresent(root, TINY)).toBe(true);
    const r = await ready();
    expect(r).toMatchObject({ name: TINY, tier: 'tiny' });
  });

  it('scores a known-good pair above partial and unrelated ones, knows its synonyms, and batches consistently', async () => {
    writeTinyReranker(rerankerFolder(root, TINY), { words: ['pnpm', 'monorepo'], synonyms: [['car', 'automobile']] });
    const r = await ready();
    const query = 'use pnpm in the monorepo';
    const passages = ['Always use pnpm in this monorepo, never npm', 'The monorepo has three packages', 'Lunch is served at noon'];
    const [good, partial, unrelated] = await r.score(query, passages);
    expect(good).toBeGreaterThan(partial!);
    expect(partial).toBeGreaterThan(unrelated!);
    const [syn, other] = await r.score('automobile', ['park the car outside', 'park the bus outside']);
    expect(syn).toBeGreaterThan(other! + 0.5);

    // More pairs than one batch, of different lengths: padding must not change a score.
    const many = Array.from({ length: 37 }, (_, i) => (i % 3 === 0 ? passages[0]! : `${passages[1]} ${'and more '.repeat(i)}`));
    const batch = await r.score(query, many);
    expect(batch).toHaveLength(37);
    for (const i of [0, 1, 17, 36]) expect(batch[i]).toBeCloseTo((await r.score(query, [many[i]!]))[0]!, 5);
  });

  it('a broken model folder is unavailable with the reason, not a crash', async () => {
    writeTinyReranker(rerankerFolder(root, TINY));
    writeFileSync(join(rerankerFolder(root, TINY), 'model.onnx'), 'not a model');
    const state = await loadReranker(root, TINY);
    expect(state.state).toBe('unavailable');
    expect(state.state === 'unavailable' && state.reason).toMatch(/could not be loaded/);
  });
});

describe('SVC_RERANKER and rerank(hits, query)', () => {
  it('reads the reranker name from the environment', () => {
    expect(selectedReranker({})).toBeUndefined();
    expect(selectedReranker({ SVC_RERANKER: 'off' })).toBeUndefined();
    expect(selectedReranker({ SVC_RERANKER: 'MS-MARCO-MiniLM-L6' })).toBe(TINY);
    expect(selectedReranker({ SVC_RERANKER: 'bge-reranker-v2-m3' })).toBe(QUALITY);
    expect(() => selectedReranker({ SVC_RERANKER: 'gpt' })).toThrow(/SVC_RERANKER must be one of bge-reranker-v2-m3, ms-marco-minilm-l6/);
    expect(() => parseRerankerName('x')).toThrow(SvcError);
  });

  it('reorders recall hits when enabled, leaves them alone (and says why) when not', async () => {
    const store = await LocalStore.open(root);
    try {
      const ids = await fillStore(store, 5);
      const { target } = groupStatements(1);
      const query = synthesizeProbe(target, documentFrequencies(ids.keys()))!;
      expect(query.split(' ')).toEqual(WORDS.slice(6, 11));
      const base = await recall(store, query, { limit: 20 });
      expect(base.hits[0]!.engram.id).not.toBe(ids.get(target)); // BM25 prefers the short ones

      const off = await rerank(base.hits, query, { storeRoot: root, env: {} });
      expect(off.reranker).toEqual({ state: 'off' });
      expect(off.hits.map((h) => h.engram.id)).toEqual(base.hits.map((h) => h.engram.id));

      const missing = await rerank(base.hits, query, { storeRoot: root, env: { SVC_RERANKER: TINY } });
      expect(missing.reranker.state).toBe('unavailable');
      expect(missing.reranker.reason).toMatch(/not installed/);
      expect(missing.hits.map((h) => h.engram.id)).toEqual(base.hits.map((h) => h.engram.id));

      writeTinyReranker(rerankerFolder(root, TINY), { words: WORDS });
      const on = await rerank(base.hits, query, { storeRoot: root, env: { SVC_RERANKER: TINY } });
      expect(on.reranker).toMatchObject({ state: 'ran', model: TINY });
      expect(on.hits[0]!.engram.id).toBe(ids.get(target));
      expect(on.hits[0]!.rerank_score).toBeGreaterThan(on.hits[1]!.rerank_score!);
      expect(new Set(on.hits.map((h) => h.engram.id))).toEqual(new Set(base.hits.map((h) => h.engram.id)));

      // Recall reranks its own head when asked for (every front end passes rerankerSetting), then cuts to the limit.
      expect(rerankerSetting(root, {})).toBeUndefined();
      const setting = rerankerSetting(root, { SVC_RERANKER: TINY })!;
      expect(setting).toEqual({ name: TINY, root });
      const wired = await recall(store, query, { limit: 2, reranker: setting });
      expect(wired.hits).toHaveLength(2);
      expect(wired.hits[0]!.engram.id).toBe(ids.get(target));
      expect(wired).toMatchObject({ query, legs: { bm25: 'ran' }, reranker: { state: 'ran', model: TINY } });
      const fast = await recall(store, query, { limit: 2, fast: true, reranker: setting });
      expect(fast.reranker).toBeUndefined();
      expect(fast.hits.map((h) => h.engram.id)).toEqual(base.hits.slice(0, 2).map((h) => h.engram.id));
      const late = await recall(store, query, { limit: 2, reranker: { ...setting, root: join(root, 'elsewhere'), budgetMs: 0 } });
      expect(late.reranker?.state).toBe('unavailable');
      expect(late.hits.map((h) => h.engram.id)).toEqual(base.hits.slice(0, 2).map((h) => h.engram.id));

      // Only the head is reordered; the rest keeps recall's order after it.
      const shallow = await rerank(base.hits, query, { reranker: await ready(), depth: 1 });
      expect(shallow.hits.map((h) => h.engram.id)).toEqual(base.hits.map((h) => h.engram.id));
      expect(RERANK_DEPTH).toBe(20);
    } finally {
      store.close();
    }
  });
});

describe('probe synthesis', () => {
  it('drops stop words and keeps the rarest half of the content words, in order', () => {
    expect(contentWords('Never deploy the API server on Fridays, never!')).toEqual(['never', 'deploy', 'api', 'server', 'fridays']);
    const df = new Map([
      ['never', 9],
      ['deploy', 3],
      ['api', 1],
      ['server', 5],
      ['fridays', 1],
    ]);
    expect(synthesizeProbe('Never deploy the API server on Fridays', df)).toBe('deploy api fridays');
    expect(synthesizeProbe('Use it', df)).toBeUndefined();
  });

  it('samples deterministically for a seed, differently for another', () => {
    const engrams = Array.from(
      { length: 40 },
      (_, i) => ({ id: `ENG-T-2026-0101-${String(i).padStart(3, '0')}`, statement: `alpha${i} beta${i} gamma` }) as EngramDoc,
    );
    const a = sampleProbes(engrams, 10, 7);
    expect(a.probes).toHaveLength(10);
    expect(sampleProbes(engrams, 10, 7)).toEqual(a);
    expect(sampleProbes(engrams, 10, 8).probes).not.toEqual(a.probes);
    expect(sampleProbes(engrams, 100, 7).probes).toHaveLength(40);
  });
});

describe('the gate', () => {
  it('has the documented thresholds', () => {
    expect(EVAL_THRESHOLDS).toMatchObject({
      min_probes: 20,
      helpful_delta_mrr: 0.02,
      harmful_delta_mrr: -0.02,
      max_age_days: 7,
      max_store_drift: 0.2,
    });
    expect(verdictFor(19, 0.5).verdict).toBe('insufficient-data');
    expect(verdictFor(20, 0.021).verdict).toBe('helpful');
    expect(verdictFor(20, -0.021).verdict).toBe('harmful');
    expect(verdictFor(20, 0.02).verdict).toBe('insufficient-data');
    expect(verdictFor(20, -0.01).reason).toMatch(/no effect shown/);
  });

  it('finds a good reranker helpful, an inverted one harmful, a small sample insufficient', async () => {
    const store = await LocalStore.open(root);
    try {
      await fillStore(store);
      writeTinyReranker(rerankerFolder(root, TINY), { words: WORDS });
      writeTinyReranker(rerankerFolder(root, QUALITY), { words: WORDS, invert: true });

      const good = await rerankEval(store, { storeRoot: root, reranker: TINY, sample: 60, seed: 3 });
      expect(good).toMatchObject({
        reranker: TINY,
        tier: 'tiny',
        verdict: 'helpful',
        mode: 'bm25',
        probes: 60,
        store_engrams: 100,
        cached: false,
        depth: 20,
      });
      expect(good.reranked.mrr).toBeGreaterThan(good.baseline.mrr + 0.02);
      expect(good.reranked.hit_at_1).toBeGreaterThan(good.baseline.hit_at_1);
      expect(good.delta_mrr).toBeCloseTo(good.reranked.mrr - good.baseline.mrr, 3);
      expect(good.promotions).toBeGreaterThan(0);
      expect(good.demotions).toBe(0);
      expect(good.promotions + good.demotions + good.unchanged).toBe(60);
      expect(good.examples.promoted[0]).toMatchObject({ after: 1 });
      expect(good.latency_ms.rerank.p50).toBeGreaterThan(0);
      expect(good.latency_ms.rerank.p95).toBeGreaterThanOrEqual(good.latency_ms.rerank.p50);

      const bad = await rerankEval(store, { storeRoot: root, reranker: QUALITY, sample: 60, seed: 3 });
      expect(bad).toMatchObject({ reranker: QUALITY, tier: 'quality', verdict: 'harmful' });
      expect(bad.demotions).toBeGreaterThan(bad.promotions);
      expect(bad.baseline).toEqual(good.baseline); // same seed, same probes, same baseline

      const few = await rerankEval(store, { storeRoot: root, reranker: TINY, sample: 10, seed: 3 });
      expect(few).toMatchObject({ verdict: 'insufficient-data', probes: 10, cached: false });
      expect(few.cache.stale_reason).toMatch(/sample size changed/);
    } finally {
      store.close();
    }
  });

  it('caches the verdict and reuses it until forced, 7 days old, or the store drifts by more than 20%', async () => {
    const store = await LocalStore.open(root);
    try {
      await fillStore(store, 20); // 80 engrams
      writeTinyReranker(rerankerFolder(root, TINY), { words: WORDS });
      const t0 = new Date('2026-03-01T10:00:00Z');
      const first = await rerankEval(store, { storeRoot: root, reranker: TINY, sample: 30, seed: 1, now: t0 });
      expect(first.cached).toBe(false);
      const file = join(root, EVAL_CACHE);
      expect(file).toBe(join(root, 'models', 'rerank-eval.json'));
      expect(JSON.parse(readFileSync(file, 'utf8')).verdicts[TINY]).toMatchObject({ verdict: first.verdict, store_engrams: 80 });

      const day6 = new Date(t0.getTime() + 6 * 86_400_000);
      const again = await rerankEval(store, { storeRoot: root, reranker: TINY, now: day6 });
      expect(again).toMatchObject({ cached: true, evaluated_at: first.evaluated_at, seed: 1, verdict: first.verdict });

      const forced = await rerankEval(store, { storeRoot: root, reranker: TINY, sample: 30, seed: 1, force: true, now: day6 });
      expect(forced).toMatchObject({ cached: false, cache: { stale_reason: 'forced' } });
      expect(forced.delta_mrr).toBe(first.delta_mrr);

      const day14 = new Date(t0.getTime() + 14 * 86_400_000);
      const old = await rerankEval(store, { storeRoot: root, reranker: TINY, sample: 30, seed: 1, now: day14 });
      expect(old).toMatchObject({ cached: false, cache: { stale_reason: 'older than 7 days' } });

      const seedChanged = await rerankEval(store, { storeRoot: root, reranker: TINY, seed: 2, sample: 30, now: day14 });
      expect(seedChanged.cache.stale_reason).toMatch(/seed changed/);

      // +16 engrams is 20%: still fresh; one more is 21%: stale.
      for (let g = 20; g < 24; g++) {
        const { target, distractors } = groupStatements(g);
        for (const s of [target, ...distractors]) await learn(store, { statement: s }, systemContext);
      }
      const small = await rerankEval(store, { storeRoot: root, reranker: TINY, now: day14 });
      expect(small.cached).toBe(true);
      await learn(store, { statement: groupStatements(24).target }, systemContext);
      const drifted = await rerankEval(store, { storeRoot: root, reranker: TINY, now: day14 });
      expect(drifted.cached).toBe(false);
      expect(drifted.cache.stale_reason).toBe('store size drifted 21% (80 -> 97 engrams)');
    } finally {
      store.close();
    }
  });

  it('refuses a reranker that is not installed, naming the folder', async () => {
    const store = await LocalStore.open(root);
    try {
      await expect(rerankEval(store, { storeRoot: root, reranker: QUALITY })).rejects.toThrow(
        /reranker bge-reranker-v2-m3 is not installed/,
      );
      expect(existsSync(join(root, EVAL_CACHE))).toBe(false);
    } finally {
      store.close();
    }
  });
});
