// `svc migrate` and `svc rerank-eval` (and recall with SVC_RERANKER) as real processes.

import { describe, it, expect } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { svc, tempStore, type RunOptions, type SvcRun } from '../../engine/test/support/run-svc.js';
import { LocalStore } from '../../engine/store/local-store.js';
import { learn } from '../../engine/ops/learn.js';
import { systemContext } from '../../engine/ops/context.js';
import { rerankerFolder } from '../../engine/rerank/reranker.js';
import { writeTinyReranker } from '../../engine/rerank/tiny-reranker.js';

const run = (args: string[], opts: RunOptions = {}): Promise<SvcRun> => svc(args, opts);

async function runJson(args: string[], opts: RunOptions = {}): Promise<{ run: SvcRun; data: any }> {
  const r = await run(args, opts);
  try {
    return { run: r, data: JSON.parse(r.stdout) };
  } catch {
    throw new Error(`svc ${args.join(' ')} printed no JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
}

describe('svc migrate', () => {
  it('status, up (printing the backup), idempotent up, down, and a too-new store refused', async () => {
    const store = tempStore('migrate');
    mkdirSync(join(store, 'engrams'), { recursive: true });
    writeFileSync(join(store, 'config.yaml'), 'store_version: 1\n');
    const id = 'ENG-OLD2-2025-0301-001';
    writeFileSync(
      join(store, 'engrams', `${id}.yaml`),
      `id: ${id}\nstatus: active\ntype: behavioral\nscope: global\nstatement: Keep commits small\n`,
    );

    const status = await runJson(['migrate', 'status'], { store });
    expect(status.run.code).toBe(0);
    expect(status.data).toMatchObject({ current: 1, latest: 2, state: 'older', pending: [{ version: 2 }] });
    const statusText = await run(['migrate', 'status', '--no-json'], { store });
    expect(statusText.stdout).toMatch(/version 1, latest 2 \(older\)/);
    expect(statusText.stdout).toMatch(/pending 2 content-hashes/);

    const up = await run(['migrate', '--no-json'], { store });
    expect(up.code).toBe(0);
    const backup = /^backup: (.+)$/m.exec(up.stdout)?.[1];
    expect(backup).toContain(join(store, 'backups'));
    expect(readFileSync(join(backup!, 'engrams', `${id}.yaml`), 'utf8')).not.toContain('content_hash');
    expect(readFileSync(join(store, 'engrams', `${id}.yaml`), 'utf8')).toMatch(/content_hash: sha256:[0-9a-f]{64}/);
    expect(up.stdout).toMatch(/migrated .* from version 1 to 2/);

    const again = await runJson(['migrate', 'up'], { store });
    expect(again.data).toMatchObject({ from: 2, to: 2, steps: [] });
    expect(again.data.backup).toBeUndefined();

    const down = await runJson(['migrate', 'down', '1'], { store });
    expect(down.run.code).toBe(0);
    expect(down.data).toMatchObject({ direction: 'down', from: 2, to: 1 });
    expect(existsSync(down.data.backup)).toBe(true);
    expect(readdirSync(join(store, 'backups')).filter((f) => f !== '.gitignore')).toHaveLength(2);

    const bad = await run(['migrate', 'down', 'one'], { store });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/migrate down <version>/);

    writeFileSync(join(store, 'config.yaml'), 'store_version: 9\n');
    const tooNew = await run(['migrate'], { store });
    expect(tooNew.code).toBe(1);
    expect(tooNew.stderr).toMatch(/version 9, newer than this svc knows \(2\): upgrade svc/);
  });
});

describe('svc rerank-eval', () => {
  it('gives a verdict with the numbers, caches it, exits 1 on harmful, and says where a missing model goes', async () => {
    const store = tempStore('rerank');
    const words: string[] = [];
    const s = await LocalStore.open(store);
    try {
      // As in the engine test: BM25 prefers short partial matches; coverage finds the full one.
      for (let g = 0; g < 25; g++) {
        const w = Array.from(
          { length: 6 },
          (_, i) => `q${String.fromCharCode(97 + (g % 26))}${String.fromCharCode(97 + i)}${'mnprt'[g % 5]}ok`,
        );
        words.push(...w);
        for (const statement of [
          `Remember that ${w[0]} and ${w[1]} go with ${w[2]}, ${w[3]}, ${w[4]} and ${w[5]} in the plan`,
          `${w[0]} ${w[1]} ${w[2]} ${w[3]}`,
          `${w[2]} ${w[3]} ${w[4]} ${w[5]}`,
          `${w[4]} ${w[5]} ${w[0]} ${w[1]}`,
        ]) {
          await learn(s, { statement }, systemContext);
        }
      }
    } finally {
      s.close();
    }

    const missing = await run(['rerank-eval', '--reranker', 'bge-reranker-v2-m3'], { store });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /reranker bge-reranker-v2-m3 is not installed: place model\.onnx and tokenizer\.json .*reranker-bge-reranker-v2-m3/,
    );
    const none = await run(['rerank-eval'], { store, env: { SVC_RERANKER: '' } });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(
      /no reranker is installed: place model\.onnx and tokenizer\.json in .*reranker-bge-reranker-v2-m3 \(bge-reranker-v2-m3, quality tier.*, or in .*reranker-ms-marco-minilm-l6 \(ms-marco-minilm-l6, tiny tier/,
    );

    writeTinyReranker(rerankerFolder(store, 'ms-marco-minilm-l6'), { words });
    const good = await runJson(['rerank-eval', '--sample', '60', '--seed', '5'], { store, env: { SVC_RERANKER: '' } });
    expect(good.run.code).toBe(0);
    expect(good.data).toMatchObject({ reranker: 'ms-marco-minilm-l6', verdict: 'helpful', probes: 60, seed: 5, cached: false });
    expect(good.data.delta_mrr).toBeGreaterThan(0.02);
    expect(good.data.latency_ms.rerank.p50).toBeGreaterThan(0);
    expect(existsSync(join(store, 'models', 'rerank-eval.json'))).toBe(true);

    const text = await run(['rerank-eval', '--no-json'], { store, env: { SVC_RERANKER: 'ms-marco-minilm-l6' } });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^verdict: helpful \(MRR changed by \+\d\.\d{4}, above \+0\.02\), cached from /);
    expect(text.stdout).toMatch(/Hit@1 +\d+\.\d% -> \d+\.\d%/);
    expect(text.stdout).toMatch(/moved +\d+ up, 0 down/);

    const forced = await runJson(['rerank-eval', '--force', '--sample', '60', '--seed', '5', '--reranker', 'ms-marco-minilm-l6'], {
      store,
    });
    expect(forced.data).toMatchObject({ cached: false, delta_mrr: good.data.delta_mrr });

    writeTinyReranker(rerankerFolder(store, 'bge-reranker-v2-m3'), { words, invert: true });
    const harmful = await runJson(['rerank-eval', '--sample', '40', '--seed', '5'], { store, env: { SVC_RERANKER: 'bge-reranker-v2-m3' } });
    expect(harmful.run.code).toBe(1);
    expect(harmful.data).toMatchObject({ reranker: 'bge-reranker-v2-m3', tier: 'quality', verdict: 'harmful' });

    const few = await runJson(['rerank-eval', '--reranker', 'ms-marco-minilm-l6', '--sample', '5'], { store });
    expect(few.run.code).toBe(0);
    expect(few.data).toMatchObject({ verdict: 'insufficient-data', probes: 5 });

    // svc recall applies the reranker SVC_RERANKER names, and says when it cannot.
    const probe = `${words[0]} ${words[2]} ${words[5]}`;
    const plain = await runJson(['recall', probe, '--limit', '3'], { store, env: { SVC_RERANKER: '' } });
    expect(plain.data.reranker).toBeUndefined();
    const reranked = await runJson(['recall', probe, '--limit', '3'], { store, env: { SVC_RERANKER: 'ms-marco-minilm-l6' } });
    expect(reranked.run.code).toBe(0);
    expect(reranked.data.reranker).toMatchObject({ state: 'ran', model: 'ms-marco-minilm-l6' });
    expect(reranked.data.results).toHaveLength(3);
    expect(reranked.data.results[0].statement).toMatch(/^Remember that /);
    expect(typeof reranked.data.results[0].rerank_score).toBe('number');
    const fastRun = await runJson(['recall', probe, '--fast'], { store, env: { SVC_RERANKER: 'ms-marco-minilm-l6' } });
    expect(fastRun.data.reranker).toBeUndefined();
    // svc inject and svc session start rank through the same recall.
    const injected = await runJson(['inject', probe], { store, env: { SVC_RERANKER: 'ms-marco-minilm-l6' } });
    expect(injected.data.reranker).toMatchObject({ state: 'ran', model: 'ms-marco-minilm-l6' });

    const badFlag = await run(['rerank-eval', '--reranker', 'cohere'], { store });
    expect(badFlag.code).toBe(1);
    expect(badFlag.stderr).toMatch(/--reranker must be one of bge-reranker-v2-m3, ms-marco-minilm-l6/);
  });
});
