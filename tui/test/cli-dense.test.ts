import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI, svc, svcJson, tempStore } from '../../engine/test/support/run-svc.js';
import { startModelHubStub } from '../../engine/test/support/model-hub-stub.js';
import { shellQuote } from '../../engine/text.js';
import { writeTinyModel } from '../../engine/embed/tiny-model.js';

// The dense path through real `svc` processes, with a tiny model placed by hand in the store's
// models/ folder, as a user on an air-gapped machine would.

function storeWithModel(): string {
  const store = tempStore('dense');
  writeTinyModel(join(store, 'models', 'fast-bge-small-en-v1.5'), {
    synonyms: [
      ['car', 'automobile'],
      ['quick', 'rapid'],
    ],
  });
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
    expect(
      r.data.results
        .map((x: { id: string }) => x.id)
        .slice(0, 2)
        .sort(),
    ).toEqual([first.data.id, second.data.id].sort());
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

const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
/** Model sources that answer nothing: a closed port on this machine. */
const NOWHERE = { HF_ENDPOINT: 'http://127.0.0.1:9', SVC_MODEL_ARCHIVE_URL: 'http://127.0.0.1:9', SVC_MODEL_BASE_URL: '' };

/** Runs svc on a pseudo-terminal (util-linux `script`): what a person at a terminal sees, stderr included. */
function onTerminal(store: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const command = [process.execPath, CLI, ...args].map(shellQuote).join(' ');
  const r = spawnSync('script', ['-qec', command, '/dev/null'], {
    env: { ...process.env, SVC_PATH: store, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return r.stdout.replace(/\r/g, '');
}

describe.skipIf(!hasScript)('after a failed model download', () => {
  it('a terminal is told why once, in one short line cut at a word, then on every recall that vectors are off and how to turn them on', async () => {
    const store = tempStore('dense-failed');
    await svc(['learn', 'Use pnpm in the monorepo'], { store });
    const warnings = (text: string) => text.split('\n').filter((l) => /BM25 only/.test(l));

    const failing = onTerminal(store, ['recall', 'pnpm'], NOWHERE);
    expect(failing).toContain('Use pnpm in the monorepo');
    expect(warnings(failing)).toHaveLength(1);
    expect(warnings(failing)[0]!.length).toBeLessThanOrEqual(220);
    expect(warnings(failing)[0]).toMatch(
      /^svc: warning: vectors off, BM25 only \(the model did not download: 127\.0\.0\.1:9 could not be reached .*; next try in an hour\): turn them on: svc models pull \(offline: svc models import <folder>\)$/,
    );

    const later = onTerminal(store, ['recall', 'pnpm'], NOWHERE);
    expect(later).toContain('Use pnpm in the monorepo');
    expect(warnings(later)).toEqual([
      'svc: warning: vectors off, BM25 only: turn them on: svc models pull (offline: svc models import <folder>)',
    ]);
    // JSON still says why the vector leg did not run, and when it is tried again.
    const json = await svcJson(['recall', 'pnpm'], { store, env: NOWHERE });
    expect(json.data.legs).toMatchObject({ vector: 'unavailable' });
    expect(json.data.legs.vector_reason).toMatch(/failed at .*; next try after .*\(svc models pull tries now\)/);
    // The short line cuts the error at a word, never inside one (it cut "bge-small-en-v1.5-…").
    const cut = /could not be reached (.*?)…/.exec(warnings(failing)[0]!)![1]!;
    expect(json.data.legs.vector_reason).toContain(`could not be reached ${cut} `);

    const pulled = await svc(['models', 'pull', '--no-json'], { store, env: NOWHERE });
    expect(pulled.code).toBe(1);
    expect(pulled.stderr.trim().split('\n')).toHaveLength(1);
    expect(pulled.stderr).toMatch(/model bge-small-en-v1\.5 did not arrive: 127\.0\.0\.1:9 could not be reached/);
  }, 60_000);
});

describe('svc models', () => {
  it('pulls from the Hub (a loopback stand-in), lists where it came from, serves hybrid recall, removes and imports', async () => {
    const hub = await startModelHubStub();
    try {
      const store = tempStore('models');
      const env = { HF_ENDPOINT: hub.url, SVC_MODEL_ARCHIVE_URL: `${hub.url}/archives`, SVC_MODEL_BASE_URL: '', SVC_EMBED_MODEL: '' };
      const empty = await svcJson(['models'], { store, env });
      expect(empty.data.models[0]).toMatchObject({ name: 'bge-small-en-v1.5', selected: true, present: false });

      const pulled = await svcJson(['models', 'pull'], { store, env });
      expect(pulled.run.code, pulled.run.stderr).toBe(0);
      expect(pulled.data).toMatchObject({
        model: 'bge-small-en-v1.5',
        source: 'huggingface',
        revision: expect.stringMatching(/^[0-9a-f]{40}$/),
      });
      const listed = await svc(['models', '--no-json'], { store, env });
      expect(listed.stdout).toMatch(/^\* bge-small-en-v1\.5 +\d+\.\d MB, Hugging Face [0-9a-f]{12}$/m);

      await svc(['learn', 'The car must be quick'], { store, env });
      const r = await svcJson(['recall', 'car'], { store, env });
      expect(r.data.legs).toMatchObject({ vector: 'ran', model: 'bge-small-en-v1.5' });

      const folder = join(store, 'models', 'fast-bge-small-en-v1.5');
      const copy = join(store, '..', 'model-copy');
      await svc(['models', 'remove', 'bge-small-en-v1.5'], { store, env });
      expect((await svcJson(['models'], { store, env })).data.models[0].present).toBe(false);
      writeTinyModel(copy);
      const imported = await svcJson(['models', 'import', copy], { store, env });
      expect(imported.data).toMatchObject({ source: 'import', from: copy });
      expect((await svcJson(['models'], { store, env })).data.models[0]).toMatchObject({ present: true, folder, source: 'import' });

      const bad = await svc(['models', 'pull', 'gpt-9', '--no-json'], { store, env });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/unknown model "gpt-9": svc knows bge-small-en-v1\.5, all-MiniLM-L6-v2/);
    } finally {
      await hub.close();
    }
  }, 60_000);
});
