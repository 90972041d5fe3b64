// The dense path for real: a tiny ONNX model the test builds, loaded by fastembed and run by
// onnxruntime, vectors in sqlite-vec, fused with BM25.

import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { inject } from '../ops/inject.js';
import { similaritySearch } from '../ops/similarity.js';
import { systemContext } from '../ops/context.js';
import { loadEmbedder } from '../embed/fastembed-embedder.js';
import { modelFolder } from '../embed/model-layout.js';
import type { Embedder, EmbedderState } from '../embed/embedder.js';
import { writeTinyModel } from '../embed/tiny-model.js';

const SYNONYMS = [
  ['car', 'automobile', 'vehicle'],
  ['quick', 'fast', 'rapid'],
  ['invoice', 'bill'],
];

let root: string;
let store: LocalStore;

beforeEach(async () => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-hybrid-')), 'store');
  store = await LocalStore.open(root);
});
afterEach(() => {
  store.close();
  rmSync(join(root, '..'), { recursive: true, force: true });
});

async function withModel(): Promise<{ state: EmbedderState; embedder: Embedder }> {
  writeTinyModel(modelFolder(root, 'bge-small-en-v1.5'), { synonyms: SYNONYMS });
  const state = await loadEmbedder(root, { download: false, progress: false, env: {} });
  if (state.state !== 'ready') throw new Error(state.reason);
  return { state, embedder: state.embedder };
}

describe('hybrid recall', () => {
  it('embeds engrams learned before the model arrived, then finds by meaning what BM25 cannot', async () => {
    const carId = (await learn(store, { statement: 'Park the car in the north garage' }, systemContext)).engram.id;
    await learn(store, { statement: 'Invoices are sent on the first of the month' }, systemContext);
    await learn(store, { statement: 'Lunch is served at noon' }, systemContext);
    expect(store.vectorStats('bge-small-en-v1.5')).toEqual({ vectors: 0, pending: 3 });

    const { state } = await withModel();
    const r = await recall(store, 'automobile', { embedder: state });
    expect(store.vectorStats('bge-small-en-v1.5')).toEqual({ vectors: 3, pending: 0 });
    expect(r.legs).toMatchObject({ bm25: 'ran', vector: 'ran', model: 'bge-small-en-v1.5' });
    expect(r.hits[0]!.engram.id).toBe(carId);
    expect(r.hits[0]!.found_by).toEqual(['vector']);
    expect(r.hits[0]!.vector!.cosine).toBeGreaterThan(r.hits[1]!.vector!.cosine);

    const fast = await recall(store, 'automobile', { fast: true, embedder: state });
    expect(fast.legs.vector).toBe('skipped');
    expect(fast.hits).toEqual([]);
  });

  it('fuses the two rankings: found by both legs beats found by one', async () => {
    const { state } = await withModel();
    const both = (await learn(store, { statement: 'The vehicle fleet is serviced monthly' }, systemContext, { embedder: state })).engram.id;
    await learn(store, { statement: 'A car wash token sits in the drawer' }, systemContext, { embedder: state });
    await learn(store, { statement: 'Fleet meetings are serviced by catering' }, systemContext, { embedder: state });
    const r = await recall(store, 'vehicle fleet', { embedder: state });
    expect(r.hits[0]!.engram.id).toBe(both);
    expect(r.hits[0]!.found_by.sort()).toEqual(['bm25', 'vector']);
    expect(r.hits[0]!.score).toBeGreaterThan(r.hits[1]!.score);
  });

  it('re-embeds an engram whose statement was edited by hand', async () => {
    const { state } = await withModel();
    const id = (await learn(store, { statement: 'Bills are paid by transfer' }, systemContext, { embedder: state })).engram.id;
    expect(store.vectorStats('bge-small-en-v1.5').pending).toBe(0);
    const file = join(root, 'engrams', `${id}.yaml`);
    const doc = parse(readFileSync(file, 'utf8'));
    doc.statement = 'The car is parked by the door';
    writeFileSync(file, stringify(doc));
    store.close();
    store = await LocalStore.open(root);
    expect(store.vectorStats('bge-small-en-v1.5').pending).toBe(1);
    const r = await recall(store, 'automobile', { embedder: state });
    expect(r.hits.map((h) => h.engram.id)).toEqual([id]);
    expect(store.vectorStats('bge-small-en-v1.5').pending).toBe(0);
  });

  it('learn warns about a near-duplicate but still writes it', async () => {
    const { state } = await withModel();
    const first = await learn(store, { statement: 'The car must be quick' }, systemContext, { embedder: state });
    const second = await learn(store, { statement: 'The automobile must be rapid' }, systemContext, { embedder: state });
    expect(second.action).toBe('created');
    expect(second.near_duplicate?.id).toBe(first.engram.id);
    expect(second.near_duplicate!.cosine).toBeGreaterThan(0.9);
    expect(second.warnings.join('\n')).toMatch(/near-duplicate of .*learned anyway/);
    const unrelated = await learn(store, { statement: 'Lunch is served at noon' }, systemContext, { embedder: state });
    expect(unrelated.near_duplicate).toBeUndefined();
  });

  it('similarity-search reads cosine as duplicate, related or new', async () => {
    const { embedder } = await withModel();
    await learn(store, { statement: 'The car must be quick' }, systemContext);
    await learn(store, { statement: 'Lunch is served at noon' }, systemContext);
    const hits = await similaritySearch(store, embedder, 'The automobile must be rapid', { limit: 10 });
    expect(hits[0]).toMatchObject({ reading: 'duplicate' });
    expect(hits[0]!.engram.statement).toBe('The car must be quick');
    expect(hits[1]!.reading).toBe('new');
    expect(hits[0]!.cosine).toBeGreaterThan(hits[1]!.cosine);
    const scoped = await similaritySearch(store, embedder, 'The automobile must be rapid', { limit: 10, scope: 'project:none' });
    expect(scoped).toEqual([]);
  });

  it('inject uses the vector leg too', async () => {
    const { state } = await withModel();
    await learn(store, { statement: 'Never leave the car unlocked' }, systemContext, { embedder: state });
    const r = await inject(store, 'lock the automobile', { embedder: state });
    expect(r.legs.vector).toBe('ran');
    expect(r.blocks.constraints.map((e) => e.statement)).toEqual(['Never leave the car unlocked']);
  });

  it('switching models re-embeds everything: vectors of two models are never compared', async () => {
    const { state } = await withModel();
    await learn(store, { statement: 'The car is parked outside' }, systemContext, { embedder: state });
    await learn(store, { statement: 'Invoices go out monthly' }, systemContext, { embedder: state });
    expect(store.vectorStats('bge-small-en-v1.5')).toEqual({ vectors: 2, pending: 0 });
    const mini = modelFolder(root, 'all-MiniLM-L6-v2');
    writeTinyModel(mini, { synonyms: SYNONYMS });
    copyFileSync(join(mini, 'model_optimized.onnx'), join(mini, 'model.onnx'));
    const other = await loadEmbedder(root, { download: false, progress: false, env: { SVC_EMBED_MODEL: 'all-MiniLM-L6-v2' } });
    if (other.state !== 'ready') throw new Error(other.reason);
    expect(store.vectorStats('all-MiniLM-L6-v2')).toEqual({ vectors: 0, pending: 2 });
    const r = await recall(store, 'automobile', { embedder: other });
    expect(r.legs.model).toBe('all-MiniLM-L6-v2');
    expect(r.hits[0]!.engram.statement).toBe('The car is parked outside');
    expect(store.vectorStats('all-MiniLM-L6-v2')).toEqual({ vectors: 2, pending: 0 });
    expect(store.vectorStats('bge-small-en-v1.5').vectors).toBe(0);
  });
});
