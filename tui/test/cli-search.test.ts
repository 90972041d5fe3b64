import { describe, it, expect } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';

// recall, inject, similarity-search, batch-decay and status through real processes, on a
// machine with no embedding model and no network: everything degrades to BM25 and says so.

async function seeded(): Promise<string> {
  const store = tempStore('search');
  for (const s of [
    'Never force-push to the main branch',
    'Use pnpm to install dependencies',
    'Release tags follow semantic versioning',
    'The staging database is reset every night',
  ]) {
    const r = await svc(['learn', s], { store });
    expect(r.code, r.stderr).toBe(0);
  }
  return store;
}

describe('recall without a model', () => {
  it('returns BM25 results and reports the vector leg as unavailable, with the reason', async () => {
    const store = await seeded();
    const started = performance.now();
    const { run, data } = await svcJson(['recall', 'how do we install dependencies?'], { store });
    expect(performance.now() - started).toBeLessThan(5_000); // nothing hangs on the missing network
    expect(run.code).toBe(0);
    expect(data.legs.bm25).toBe('ran');
    expect(data.legs.vector).toBe('unavailable');
    expect(data.legs.vector_reason).toMatch(/bge-small-en-v1\.5/);
    expect(data.results[0]).toMatchObject({ statement: 'Use pnpm to install dependencies', found_by: ['bm25'] });
    expect(data.results[0].bm25.rank).toBe(1);
    // The failed download is remembered, so the next call does not try again.
    expect(existsSync(join(store, 'models', '.download-failed.json'))).toBe(true);
    const again = await svcJson(['recall', 'install'], { store });
    expect(again.data.legs.vector_reason).toMatch(/next try after .*svc models pull tries now/);
  });

  it('--fast skips the vector leg altogether', async () => {
    const store = await seeded();
    const { data } = await svcJson(['recall', 'install', '--fast'], { store });
    expect(data.legs.vector).toBe('skipped');
    expect(existsSync(join(store, 'models'))).toBe(false);
  });

  it('status says search is BM25 only, and why', async () => {
    const store = await seeded();
    const { data } = await svcJson(['status'], { store });
    expect(data.search.bm25).toBe('ready');
    expect(data.search.vector).toMatchObject({ state: 'unavailable', model: 'bge-small-en-v1.5' });
    expect(data.search.vector.reason).toMatch(/not in .*fast-bge-small-en-v1\.5/);
    const text = await svc(['status', '--no-json'], { store });
    // Why, and how to turn vectors on (issue 27: status named neither svc models pull nor import).
    expect(text.stdout).toMatch(
      /Search\s+vectors off, BM25 only \(model bge-small-en-v1\.5 is not in .*\): turn them on: svc models pull \(offline: svc models import <folder>\)\n/,
    );
  });
});

describe('inject', () => {
  it('prints the blocks and the learning protocol, within the budget', async () => {
    const store = await seeded();
    const text = await svc(['inject', 'push the release to the main branch', '--no-json'], { store });
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/## CONSTRAINTS\n- Never force-push to the main branch \(ENG-/);
    expect(text.stdout).toMatch(/## LEARNING PROTOCOL/);
    const { data } = await svcJson(['inject', 'push the release to the main branch', '--budget', '60', '--no-with-default-protocol'], {
      store,
    });
    expect(data.tokens).toBeLessThanOrEqual(60);
    expect(data.protocol).toBe(false);
    expect(data.text).not.toMatch(/LEARNING PROTOCOL/);
    const bad = await svc(['inject', 'x', '--budget', 'lots'], { store });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--budget must be a number \(got \\"lots\\"\)/);
    // One rule with MCP and the hub: below 50 tokens is refused, not answered with nothing.
    expect((await svc(['inject', 'x', '--budget', '5'], { store })).stderr).toMatch(
      /--budget must be a whole number of tokens from 50 to 100000 \(got 5\)/,
    );
  });
});

describe('similarity-search and batch-decay', () => {
  it('similarity-search explains that it needs the model', async () => {
    const store = await seeded();
    const r = await svc(['similarity-search', 'pnpm'], { store });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/similarity search needs the embedding model/);
  });

  it('batch-decay reports processed, decayed and skipped counts', async () => {
    const store = await seeded();
    const { run, data } = await svcJson(['batch-decay', '--context-scope', 'project:app'], { store });
    expect(run.code).toBe(0);
    expect(data).toEqual({ processed: 4, decayed: 0, skipped: 4, transitions: [] });
  });
});
