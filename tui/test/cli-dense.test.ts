import { describe, it, expect } from 'vitest';
import { join } from 'node:path';
import { svc, svcJson, tempStore } from './run-svc.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';

// The dense path through real `svc` processes, with a tiny model placed by hand in the store's
// models/ folder, as a user on an air-gapped machine would.

function storeWithModel(): string {
  const store = tempStore('dense');
  writeTinyModel(join(store, 'models', 'fast-bge-small-en-v1.5'), { synonyms: [['car', 'automobile'], ['quick', 'rapid']] });
  return store;
}

describe('svc with a model placed by hand', () => {
  it('recall runs both legs, learn flags near-duplicates, similarity-search reads cosines, status counts vectors', async () => {
    const store = storeWithModel();
    const first = await svcJson(['learn', 'The car must be quick'], { store });
    expect(first.run.code).toBe(0);
    const second = await svcJson(['learn', 'The automobile must be rapid'], { store });
    expect(second.data.near_duplicate.id).toBe(first.data.id);
    expect(second.run.stderr).toMatch(/near-duplicate/);
    await svc(['learn', 'Lunch is served at noon'], { store });

    const r = await svcJson(['recall', 'automobile'], { store });
    expect(r.data.legs).toMatchObject({ bm25: 'ran', vector: 'ran', model: 'bge-small-en-v1.5' });
    expect(r.data.results.map((x: { id: string }) => x.id).slice(0, 2).sort()).toEqual([first.data.id, second.data.id].sort());
    expect(r.data.results.find((x: { id: string }) => x.id === first.data.id).found_by).toEqual(['vector']);

    const sim = await svcJson(['similarity-search', 'The car must be rapid', '--limit', '2'], { store });
    expect(sim.data.results).toHaveLength(2);
    expect(sim.data.results[0].reading).toBe('duplicate');
    const text = await svc(['similarity-search', 'lunch at noon', '--no-json'], { store });
    expect(text.stdout.split('\n')[0]).toMatch(/^\d\.\d{4}\s+\w+\s+ENG-.*Lunch is served at noon$/);

    const status = await svcJson(['status'], { store });
    expect(status.data.search.vector).toEqual({ state: 'ready', model: 'bge-small-en-v1.5', vectors: 3, pending: 0 });
  });

  it('a broken model degrades to BM25 and says so everywhere', async () => {
    const store = tempStore('broken');
    const folder = join(store, 'models', 'fast-bge-small-en-v1.5');
    writeTinyModel(folder);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(join(folder, 'model_optimized.onnx'), 'not an onnx graph');
    await svc(['learn', 'Deploys happen on Tuesdays'], { store });
    const r = await svcJson(['recall', 'deploys'], { store });
    expect(r.run.code).toBe(0);
    expect(r.data.legs.vector).toBe('unavailable');
    expect(r.data.results[0].statement).toBe('Deploys happen on Tuesdays');
    expect(r.run.stderr).not.toMatch(/\n\s+at /);
    const status = await svcJson(['status'], { store });
    expect(status.data.search.vector.state).toBe('unavailable');
    expect(status.data.search.vector.reason).toMatch(/fast-bge-small-en-v1\.5/);
  });
});
