import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { create as tarCreate } from 'tar';
import { loadEmbedder, modelProbe } from '../embed/fastembed-embedder.js';
import { LAYOUT, PROVENANCE_FILE, downloadFailure, modelFolder, modelPresent, modelsDir } from '../embed/model-layout.js';
import { MODEL_SOURCES, importModel, pullModel, removeModel, type Probe } from '../embed/model-supply.js';
import { writeTinyModel } from '../embed/tiny-model.js';
import { LocalStore } from '../store/local-store.js';
import { learn } from '../ops/learn.js';
import { recall } from '../ops/recall.js';
import { systemContext } from '../ops/context.js';
import { startModelHubStub, type ModelHubStub } from './support/model-hub-stub.js';

// The model supply against a loopback Hub (and archive mirror) serving the tiny test model: a
// normal pull, then every way a network fails. No failure leaves a model folder that looks whole,
// and each says in one line what happened and what to do.

const BGE = 'bge-small-en-v1.5';
const SOURCE = MODEL_SOURCES[BGE];
let hub: ModelHubStub;
let root: string;
let env: NodeJS.ProcessEnv;

/** The probe the embedder uses: the staged model must load with fastembed and run. */
const probe: Probe = modelProbe(BGE);

const onnxPath = `/${SOURCE.repo}/resolve/${SOURCE.revision}/${LAYOUT[BGE].onnx}`;
const leftovers = () => (existsSync(modelsDir(root)) ? readdirSync(modelsDir(root)).filter((n) => !n.startsWith('.download-failed')) : []);

beforeAll(async () => {
  hub = await startModelHubStub();
});
afterAll(async () => hub?.close());

beforeEach(() => {
  root = join(mkdtempSync(join(tmpdir(), 'svc-supply-')), 'store');
  mkdirSync(root, { recursive: true });
  hub.faults.clear();
  hub.omit.clear();
  hub.archives.clear();
  hub.requests.length = 0;
  env = { HF_ENDPOINT: hub.url, SVC_MODEL_ARCHIVE_URL: `${hub.url}/archives` };
});

describe('pulling a model from the Hub', () => {
  it('fetches every file at the pinned revision, checks it, records where it came from, and hybrid recall runs', async () => {
    const state = await loadEmbedder(root, { download: true, progress: false, env });
    expect(state.state, state.state === 'unavailable' ? state.reason : '').toBe('ready');
    expect(modelPresent(root, BGE)).toBe(true);
    const provenance = JSON.parse(readFileSync(join(modelFolder(root, BGE), PROVENANCE_FILE), 'utf8'));
    expect(provenance).toMatchObject({ model: BGE, source: 'huggingface', from: `${hub.url}/${SOURCE.repo}`, revision: SOURCE.revision });
    expect(provenance.files.map((f: { name: string }) => f.name).sort()).toEqual(
      [LAYOUT[BGE].onnx, 'config.json', 'special_tokens_map.json', 'tokenizer.json', 'tokenizer_config.json'].sort(),
    );
    expect(leftovers()).toEqual([LAYOUT[BGE].folder]); // no staging, no lock
    expect(hub.requests.some((r) => r.path === `/api/models/${SOURCE.repo}/tree/${SOURCE.revision}`)).toBe(true);

    const store = await LocalStore.open(root);
    try {
      await learn(store, { statement: 'Deploy the billing service with helm' }, systemContext);
      const r = await recall(store, 'helm deploy', { embedder: state });
      expect(r.legs).toMatchObject({ vector: 'ran', model: BGE });
    } finally {
      store.close();
    }
  });

  it('a 403 with an XML body, then no archive either: one line naming both, no model, the next automatic try an hour away', async () => {
    hub.faults.set(LAYOUT[BGE].onnx, 'forbidden');
    const state = await loadEmbedder(root, { download: true, progress: false, env });
    expect(state.state).toBe('unavailable');
    const reason = state.state === 'unavailable' ? state.reason : '';
    expect(reason).not.toContain('\n');
    expect(reason).toMatch(
      new RegExp(
        `^model ${BGE} did not arrive: 127\\.0\\.0\\.1:\\d+ answered 403 for ${SOURCE.repo} ${LAYOUT[BGE].onnx} \\(a token in HF_TOKEN, or a mirror\\?\\); then 127\\.0\\.0\\.1:\\d+ answered 404 for fast-bge-small-en-v1\\.5\\.tar\\.gz\\. svc models pull tries again`,
      ),
    );
    expect(modelPresent(root, BGE)).toBe(false);
    expect(existsSync(modelFolder(root, BGE))).toBe(false);
    expect(downloadFailure(root, BGE)).toMatchObject({ error: expect.stringMatching(/answered 403 for /), retryAt: expect.any(String) });
    const again = await loadEmbedder(root, { download: true, progress: false, env });
    expect(again.state === 'unavailable' && again.retryAt).toBeTruthy();
  });

  it('a body cut off part way keeps what came and the next pull resumes it with a range request', async () => {
    hub.faults.set(LAYOUT[BGE].onnx, 'cut-once');
    await expect(pullModel(root, BGE, probe, { env })).rejects.toThrow(/bytes kept; the next try resumes/);
    expect(existsSync(modelFolder(root, BGE))).toBe(false);
    const part = join(modelsDir(root), `.partial-${LAYOUT[BGE].folder}`, `${LAYOUT[BGE].onnx}.part`);
    const kept = statSync(part).size;
    expect(kept).toBeGreaterThan(0);
    hub.requests.length = 0;
    const provenance = await pullModel(root, BGE, probe, { env });
    expect(provenance.source).toBe('huggingface');
    const ranged = hub.requests.filter((r) => r.path === onnxPath && r.range && r.range !== 'bytes=0-0');
    expect(ranged.map((r) => r.range)).toEqual([expect.stringMatching(new RegExp(`^bytes=${kept}-\\d+$`))]);
    expect(modelPresent(root, BGE)).toBe(true);
  });

  it("a file that does not match the Hub's sha256 is deleted and never installed", async () => {
    hub.faults.set(LAYOUT[BGE].onnx, 'corrupt');
    await expect(pullModel(root, BGE, probe, { env })).rejects.toThrow(
      new RegExp(`${LAYOUT[BGE].onnx} from 127\\.0\\.0\\.1:\\d+ does not match the sha256 the Hub states for it: deleted`),
    );
    expect(existsSync(modelFolder(root, BGE))).toBe(false);
    expect(existsSync(join(modelsDir(root), `.partial-${LAYOUT[BGE].folder}`, `${LAYOUT[BGE].onnx}.part`))).toBe(false);
  });

  it('a server that stalls is given up after the stall time, saying so', async () => {
    hub.faults.set(LAYOUT[BGE].onnx, 'stall');
    const started = Date.now();
    await expect(pullModel(root, BGE, probe, { env, stallMs: 400 })).rejects.toThrow(
      /stopped sending model_optimized\.onnx at 0 of \d+ bytes/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(existsSync(modelFolder(root, BGE))).toBe(false);
  });

  it('falls back to the archive when the Hub fails, and a mirror (SVC_MODEL_BASE_URL) is the only source when set', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-archive-'));
    writeTinyModel(join(dir, LAYOUT[BGE].folder));
    const archive = join(dir, SOURCE.archive);
    await tarCreate({ gzip: true, file: archive, cwd: dir }, [LAYOUT[BGE].folder]);
    hub.archives.set(SOURCE.archive, readFileSync(archive));

    hub.omit.add('tokenizer.json'); // the Hub's repository lacks a file
    const p = await pullModel(root, BGE, probe, { env });
    expect(p).toMatchObject({ source: 'archive', from: `${hub.url}/archives/${SOURCE.archive}` });
    expect(modelPresent(root, BGE)).toBe(true);

    removeModel(root, BGE);
    hub.requests.length = 0;
    const mirrored = await pullModel(root, BGE, probe, { env: { ...env, SVC_MODEL_BASE_URL: `${hub.url}/archives/` } });
    expect(mirrored.source).toBe('mirror');
    expect(hub.requests.every((r) => r.path.startsWith('/archives/'))).toBe(true);

    // An HTML page where the archive should be is not an archive.
    removeModel(root, BGE);
    hub.archives.clear();
    await expect(pullModel(root, BGE, probe, { env: { ...env, SVC_MODEL_BASE_URL: 'http://127.0.0.1:9' } })).rejects.toThrow(
      /could not be reached for fast-bge-small-en-v1\.5\.tar\.gz.*check SVC_MODEL_BASE_URL/,
    );
  });

  it('derives special_tokens_map.json when the repository leaves it out', async () => {
    hub.omit.add('special_tokens_map.json');
    await pullModel(root, BGE, probe, { env });
    const map = JSON.parse(readFileSync(join(modelFolder(root, BGE), 'special_tokens_map.json'), 'utf8'));
    expect(map).toMatchObject({ cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]', mask_token: '[MASK]' });
  });
});

describe('importing and removing by hand', () => {
  it('imports a folder or an archive made elsewhere, refuses one that is not the model, removes it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-import-model-'));
    writeTinyModel(join(dir, 'copy'));
    const p = await importModel(root, BGE, join(dir, 'copy'), probe);
    expect(p).toMatchObject({ source: 'import', from: join(dir, 'copy') });
    expect(modelPresent(root, BGE)).toBe(true);
    await expect(importModel(root, BGE, join(dir, 'copy'), probe)).rejects.toThrow(
      /is already there: svc models remove bge-small-en-v1\.5 first/,
    );
    expect(removeModel(root, BGE)).toBe(true);
    expect(existsSync(modelFolder(root, BGE))).toBe(false);

    await tarCreate({ gzip: true, file: join(dir, 'm.tgz'), cwd: dir }, ['copy']);
    expect((await importModel(root, BGE, join(dir, 'm.tgz'), probe)).source).toBe('import');
    removeModel(root, BGE);

    mkdirSync(join(dir, 'empty'));
    await expect(importModel(root, BGE, join(dir, 'empty'), probe)).rejects.toThrow(
      /no model_optimized\.onnx with a tokenizer\.json in .*empty: is it bge-small-en-v1\.5\?/,
    );
    writeFileSync(join(dir, 'garbage.tar.gz'), 'not an archive');
    await expect(importModel(root, BGE, join(dir, 'garbage.tar.gz'), probe)).rejects.toThrow(
      /garbage\.tar\.gz is not a readable \.tar\.gz archive/,
    );
    writeTinyModel(join(dir, 'broken'));
    writeFileSync(join(dir, 'broken', LAYOUT[BGE].onnx), 'not onnx');
    await expect(importModel(root, BGE, join(dir, 'broken'), probe)).rejects.toThrow(/does not load/);
    expect(leftovers()).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });
});
