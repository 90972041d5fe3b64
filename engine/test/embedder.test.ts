// The fastembed provider against a tiny real model: real tokenizer, real onnxruntime, no network.

import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEmbedder } from '../embed/fastembed-embedder.js';
import { modelFolder, modelPresent, modelsDir, selectedModel } from '../embed/model-layout.js';
import type { Embedder, EmbedderState } from '../embed/embedder.js';
import { SvcError } from '../errors.js';
import { writeTinyModel } from '../embed/tiny-model.js';

const BGE = 'bge-small-en-v1.5' as const;
// Never the caller's SVC_EMBED* settings; model sources that answer nothing (a closed local port),
// so a download fails fast and the same way on every machine (model-supply.test.ts covers pulls).
const env = { HF_ENDPOINT: 'http://127.0.0.1:9', SVC_MODEL_ARCHIVE_URL: 'http://127.0.0.1:9' } as NodeJS.ProcessEnv;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-embed-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const cosine = (a: Float32Array, b: Float32Array): number => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
const norm = (v: Float32Array): number => Math.sqrt(cosine(v, v));

function ready(state: EmbedderState): Embedder {
  if (state.state !== 'ready') throw new Error(`expected ready, got: ${state.reason}`);
  return state.embedder;
}

describe('model selection and presence', () => {
  it('defaults to bge-small-en-v1.5, accepts MiniLM, rejects anything else naming the allowed values', () => {
    expect(selectedModel({})).toBe(BGE);
    expect(selectedModel({ SVC_EMBED_MODEL: 'all-MiniLM-L6-v2' })).toBe('all-MiniLM-L6-v2');
    expect(() => selectedModel({ SVC_EMBED_MODEL: 'gpt-embed' })).toThrow(SvcError);
    expect(() => selectedModel({ SVC_EMBED_MODEL: 'gpt-embed' })).toThrow(/bge-small-en-v1\.5, all-MiniLM-L6-v2/);
  });

  it('places models where fastembed looks and checks the files it loads', () => {
    expect(modelsDir(root)).toBe(join(root, 'models'));
    expect(modelFolder(root, BGE)).toBe(join(root, 'models', 'fast-bge-small-en-v1.5'));
    expect(modelFolder(root, 'all-MiniLM-L6-v2')).toBe(join(root, 'models', 'fast-all-MiniLM-L6-v2'));
    expect(modelPresent(root, BGE)).toBe(false);
    writeTinyModel(modelFolder(root, BGE));
    expect(modelPresent(root, BGE)).toBe(true);
    expect(modelPresent(root, 'all-MiniLM-L6-v2')).toBe(false);
    rmSync(join(modelFolder(root, BGE), 'tokenizer.json'));
    expect(modelPresent(root, BGE)).toBe(false);
  });
});

describe('loading the tiny model', () => {
  it('embeds with unit 384-d vectors, synonyms close, passages in order', async () => {
    writeTinyModel(modelFolder(root, BGE), {
      synonyms: [
        ['car', 'automobile'],
        ['fast', 'quick'],
      ],
    });
    const embedder = ready(await loadEmbedder(root, { download: false, progress: false, env }));
    expect(embedder.model).toBe(BGE);
    expect(embedder.dimensions).toBe(384);

    const query = await embedder.embedQuery('automobile');
    expect(query).toBeInstanceOf(Float32Array);
    expect(query.length).toBe(384);
    expect(norm(query)).toBeCloseTo(1, 5);

    const texts = ['the car is red', 'banana bread recipe', 'a quick fix', 'the car is red'];
    const passages = await embedder.embedPassages(texts);
    expect(passages).toHaveLength(4);
    for (const p of passages) expect(norm(p)).toBeCloseTo(1, 5);
    expect(cosine(passages[0]!, passages[3]!)).toBeCloseTo(1, 5); // same text, same vector, same slot
    // "automobile" finds "car" through vectors, which BM25 cannot.
    expect(cosine(query, passages[0]!)).toBeGreaterThan(cosine(query, passages[1]!) + 0.3);
    const fast = await embedder.embedQuery('fast');
    expect(cosine(fast, passages[2]!)).toBeGreaterThan(cosine(fast, passages[1]!) + 0.3);
    // order: each passage matches its own single-text embedding
    for (const [i, text] of texts.entries()) {
      const [alone] = await embedder.embedPassages([text]);
      expect(cosine(alone!, passages[i]!)).toBeCloseTo(1, 5);
    }
    expect(await embedder.embedPassages([])).toEqual([]);
  });

  it('loads once per store and model', async () => {
    writeTinyModel(modelFolder(root, BGE));
    const a = ready(await loadEmbedder(root, { download: false, progress: false, env }));
    const b = ready(await loadEmbedder(root, { download: true, progress: false, env }));
    expect(b).toBe(a);
  });

  it('reports a corrupt model as unavailable, naming the folder, without throwing', async () => {
    const folder = modelFolder(root, BGE);
    writeTinyModel(folder);
    writeFileSync(join(folder, 'model_optimized.onnx'), randomBytes(4096));
    const state = await loadEmbedder(root, { download: true, progress: false, env });
    expect(state.state).toBe('unavailable');
    if (state.state === 'unavailable') {
      expect(state.reason).toContain(folder);
      expect(state.reason).not.toContain('\n');
    }
    expect(existsSync(join(modelsDir(root), '.download-failed.json'))).toBe(false); // present: no download tried
  });

  it('reports missing tokenizer files as unavailable', async () => {
    const folder = modelFolder(root, BGE);
    writeTinyModel(folder);
    rmSync(join(folder, 'special_tokens_map.json'));
    const state = await loadEmbedder(root, { download: false, progress: false, env });
    expect(state).toMatchObject({ state: 'unavailable', model: BGE });
    if (state.state === 'unavailable') expect(state.reason).toMatch(/special_tokens_map\.json/);
  });

  it('is off with SVC_EMBED=off even when the model is there', async () => {
    writeTinyModel(modelFolder(root, BGE));
    const state = await loadEmbedder(root, { download: true, progress: false, env: { SVC_EMBED: 'off' } });
    expect(state).toEqual({ state: 'unavailable', model: BGE, reason: 'disabled by SVC_EMBED=off' });
  });
});

describe('absent model', () => {
  it('without download: unavailable, naming the folder', async () => {
    const state = await loadEmbedder(root, { download: false, progress: false, env });
    expect(state.state).toBe('unavailable');
    if (state.state === 'unavailable') expect(state.reason).toContain(modelFolder(root, BGE));
    expect(existsSync(modelsDir(root))).toBe(false);
  });

  it('with download and no source answering: fails fast, leaves a marker, does not retry', async () => {
    const t0 = performance.now();
    const first = await loadEmbedder(root, { download: true, progress: false, env });
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(first.state).toBe('unavailable');
    if (first.state !== 'unavailable') return;
    expect(first.reason).toMatch(/^model bge-small-en-v1\.5 did not arrive: 127\.0\.0\.1:9 could not be reached for /);

    const marker = JSON.parse(readFileSync(join(modelsDir(root), '.download-failed.json'), 'utf8'));
    expect(marker).toMatchObject({ model: BGE, error: expect.any(String) });
    expect(first.reason).toContain(marker.error);
    // nothing modelPresent could accept, no partial archive, no staging folder
    expect(readdirSync(modelsDir(root))).toEqual(['.download-failed.json']);
    expect(modelPresent(root, BGE)).toBe(false);

    const t1 = performance.now();
    const second = await loadEmbedder(root, { download: true, progress: false, env });
    expect(performance.now() - t1).toBeLessThan(50);
    expect(second.state).toBe('unavailable');
    if (second.state === 'unavailable') {
      expect(second.reason).toContain(marker.error);
      expect(second.reason).toContain('next try after');
      expect(second.reason).toContain('svc models pull tries now');
      expect(Date.parse(second.retryAt!) - Date.parse(marker.at)).toBe(3600_000);
    }
    expect(first.retryAt).toBeUndefined(); // the failed attempt itself is the one to warn about
  });

  it('a marker blocks only its own model, and only for an hour', async () => {
    mkdirSync(modelsDir(root));
    const marker = join(modelsDir(root), '.download-failed.json');
    const mini = { ...env, SVC_EMBED_MODEL: 'all-MiniLM-L6-v2' };
    writeFileSync(marker, JSON.stringify({ model: 'all-MiniLM-L6-v2', at: new Date().toISOString(), error: 'boom' }));
    const blocked = await loadEmbedder(root, { download: true, progress: false, env: mini });
    expect(blocked.state === 'unavailable' && blocked.reason).toMatch(/boom.*next try after/);

    const other = await loadEmbedder(root, { download: true, progress: false, env }); // bge: tries (and fails offline)
    expect(other.state === 'unavailable' && other.reason).toMatch(/^model bge-small-en-v1\.5 did not arrive: /);

    writeFileSync(
      marker,
      JSON.stringify({ model: 'all-MiniLM-L6-v2', at: new Date(Date.now() - 2 * 3600_000).toISOString(), error: 'boom' }),
    );
    const retried = await loadEmbedder(root, { download: true, progress: false, env: mini });
    expect(retried.state === 'unavailable' && retried.reason).toMatch(/^model all-MiniLM-L6-v2 did not arrive: /);
  });
});
