// The fastembed provider of the dense leg. The model lives in the store's `models/` folder in the
// layout fastembed uses (`fast-<name>/`), either downloaded on the first hybrid call or placed
// there by hand on an air-gapped machine. Loading never throws: a missing or broken model becomes
// an `unavailable` state with a one-line reason that recall and status report verbatim.

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FlagEmbedding } from 'fastembed';
import { invalid } from '../errors.js';
import { DEFAULT_EMBEDDING_MODEL, EMBEDDING_MODELS, type Embedder, type EmbedderState, type EmbeddingModelName } from './embedder.js';

/** Folder fastembed uses for each model, and the .onnx file it loads from it. */
const LAYOUT: Record<EmbeddingModelName, { folder: string; onnx: string }> = {
  'bge-small-en-v1.5': { folder: 'fast-bge-small-en-v1.5', onnx: 'model_optimized.onnx' },
  'all-MiniLM-L6-v2': { folder: 'fast-all-MiniLM-L6-v2', onnx: 'model.onnx' },
};

// fastembed pads every input to maxLength; engrams are short, so 128 tokens is plenty and much faster.
const MAX_TOKENS = 128;
// Bounds the attention activations of one run (batch x 12 heads x 128 x 128 floats).
const BATCH_SIZE = 32;
// Give up on a download that has received no bytes for this long (covers the connection phase).
const STALL_MS = 30_000;
// After a failed download, do not try again for this long: an offline machine must not retry on every call.
const RETRY_AFTER_MS = 60 * 60 * 1000;
const FAILURE_MARKER = '.download-failed.json';
const DOWNLOAD_HOST = 'storage.googleapis.com';

export function modelsDir(storeRoot: string): string {
  return join(storeRoot, 'models');
}

export function selectedModel(env: NodeJS.ProcessEnv = process.env): EmbeddingModelName {
  const value = env.SVC_EMBED_MODEL?.trim();
  if (!value) return DEFAULT_EMBEDDING_MODEL;
  const model = EMBEDDING_MODELS.find((m) => m === value);
  if (!model) throw invalid(`SVC_EMBED_MODEL must be one of ${EMBEDDING_MODELS.join(', ')} (got "${value}")`);
  return model;
}

export function modelFolder(storeRoot: string, model: EmbeddingModelName): string {
  return join(modelsDir(storeRoot), LAYOUT[model].folder);
}

/** Cheap (two stat calls, no fastembed import): runs on every recall. */
export function modelPresent(storeRoot: string, model: EmbeddingModelName): boolean {
  const folder = modelFolder(storeRoot, model);
  return existsSync(join(folder, LAYOUT[model].onnx)) && existsSync(join(folder, 'tokenizer.json'));
}

export interface LoadOptions {
  /** Fetch the model when it is not in `models/` (hybrid recall does; hooks and status do not). */
  download: boolean;
  /** Show fastembed's progress bar on stderr while downloading. */
  progress: boolean;
  env?: NodeJS.ProcessEnv;
}

// A long-lived process (the MCP server) loads each model once. Only `ready` states stay cached, so a
// model placed by hand later is picked up; concurrent calls share one load or one download.
const opened = new Map<string, Promise<EmbedderState>>();
const downloads = new Map<string, Promise<EmbedderState>>();

/**
 * The dense leg's state for this store. Throws only for an invalid SVC_EMBED_MODEL; every load or
 * download failure comes back as `unavailable` with a reason.
 */
export async function loadEmbedder(storeRoot: string, opts: LoadOptions): Promise<EmbedderState> {
  const env = opts.env ?? process.env;
  if (env.SVC_EMBED?.trim().toLowerCase() === 'off') {
    return unavailable(selectedModelOrDefault(env), 'disabled by SVC_EMBED=off');
  }
  const model = selectedModel(env);
  const folder = modelFolder(storeRoot, model);
  const key = `${resolve(storeRoot)}\n${model}`;

  if (modelPresent(storeRoot, model)) return once(opened, key, () => open(model, folder), (s) => s.state === 'ready');
  if (!opts.download) {
    return unavailable(model, `model ${model} is not in ${folder}; run a hybrid recall with network access or place the model folder there by hand`);
  }
  const failed = recentFailure(storeRoot, model);
  if (failed) return unavailable(model, failed);
  return once(downloads, key, async () => {
    const state = await download(storeRoot, model, opts.progress);
    if (state.state === 'ready') opened.set(key, Promise.resolve(state));
    return state;
  }, () => false);
}

/** Shares one pending load per key; keeps the result only if `keep` says so. */
function once(
  cache: Map<string, Promise<EmbedderState>>,
  key: string,
  make: () => Promise<EmbedderState>,
  keep: (s: EmbedderState) => boolean,
): Promise<EmbedderState> {
  let pending = cache.get(key);
  if (!pending) {
    pending = make();
    cache.set(key, pending);
    pending.then((s) => keep(s) || cache.delete(key));
  }
  return pending;
}

/** Loads a model folder that is already in place. Never downloads: fastembed is told the exact path. */
async function open(model: EmbeddingModelName, folder: string): Promise<EmbedderState> {
  try {
    const fastembed = await import('fastembed');
    const flag = await fastembed.FlagEmbedding.init({
      model: fastembed.EmbeddingModel.CUSTOM,
      modelAbsoluteDirPath: folder,
      modelName: LAYOUT[model].onnx,
      maxLength: MAX_TOKENS,
      showDownloadProgress: false,
    });
    return { state: 'ready', model, embedder: await wrap(flag, model, folder) };
  } catch (error) {
    return unavailable(model, `model ${model} in ${folder} could not be loaded: ${oneLine(error)}`);
  }
}

/**
 * fastembed pads every input to maxLength (128 tokens), so a ten-word query costs as much as a
 * 128-token passage. Queries go through a twin that shares the ONNX session but whose tokenizer
 * does not pad: one query is one row, so its own length is all the model needs. (Passages keep
 * fixed padding: fastembed stacks a batch into one tensor and needs equal rows.) This reaches
 * fastembed's private fields, so fastembed is pinned to the version it was written against.
 */
async function queryTwin(flag: FlagEmbedding, folder: string): Promise<FlagEmbedding> {
  type Internals = { session: unknown; model: unknown };
  const cls = flag.constructor as unknown as { loadTokenizer(dir: string, maxLength: number): { disablePadding(): void } };
  const tokenizer = cls.loadTokenizer(folder, MAX_TOKENS);
  tokenizer.disablePadding();
  const { session, model } = flag as unknown as Internals;
  return Object.assign(Object.create(Object.getPrototypeOf(flag) as object), { tokenizer, session, model }) as FlagEmbedding;
}

async function wrap(flag: FlagEmbedding, model: EmbeddingModelName, folder: string): Promise<Embedder> {
  const queries = await queryTwin(flag, folder);
  // One probe run proves the graph actually produces vectors (a model can load yet fail to run)
  // and tells the dimensions.
  const probe = toVector(await queries.queryEmbed('probe'));
  return {
    model,
    dimensions: probe.length || 384,
    async embedQuery(text: string): Promise<Float32Array> {
      return toVector(await queries.queryEmbed(text));
    },
    async embedPassages(texts: string[]): Promise<Float32Array[]> {
      const out: Float32Array[] = [];
      for await (const batch of flag.passageEmbed(texts, BATCH_SIZE)) out.push(...batch.map(toVector));
      return out;
    },
  };
}

// fastembed already normalizes (and hands back Float32Array slices); copy only when it did not.
function toVector(v: ArrayLike<number>): Float32Array {
  return v instanceof Float32Array ? v : Float32Array.from(v);
}

// --- download -------------------------------------------------------------------------------------

/**
 * Downloads into a private staging folder and moves the model into `models/` only once it has
 * loaded and run, so an abandoned or failed download never leaves a `.tar.gz` or a half-extracted
 * folder that `modelPresent` would accept.
 */
async function download(storeRoot: string, model: EmbeddingModelName, progress: boolean): Promise<EmbedderState> {
  const dir = modelsDir(storeRoot);
  const folder = modelFolder(storeRoot, model);
  const { folder: name } = LAYOUT[model];
  let staging: string | undefined;
  let stopWatch = (): void => {};
  try {
    mkdirSync(dir, { recursive: true });
    sweepStaging(dir);
    staging = join(dir, `.partial-${process.pid}-${Date.now()}`);
    mkdirSync(staging);
    const fastembed = await import('fastembed');
    const init = fastembed.FlagEmbedding.init({
      model: model === 'bge-small-en-v1.5' ? fastembed.EmbeddingModel.BGESmallENV15 : fastembed.EmbeddingModel.AllMiniLML6V2,
      cacheDir: staging,
      maxLength: MAX_TOKENS,
      showDownloadProgress: progress,
    });
    init.catch(() => {}); // if the stall watch wins, the abandoned attempt must not become an unhandled rejection
    const watch = stallWatch(join(staging, `${name}.tar.gz`), join(staging, name));
    stopWatch = watch.stop;
    const flag = await Promise.race([init, watch.stalled]);
    stopWatch();
    const embedder = await wrap(flag, model, join(staging, name));
    install(join(staging, name), folder, storeRoot, model);
    rmSync(join(dir, FAILURE_MARKER), { force: true });
    return { state: 'ready', model, embedder };
  } catch (error) {
    stopWatch();
    await dropDownloadSockets();
    const reason = `download of model ${model} into ${folder} failed: ${oneLine(error)}`;
    try {
      writeFileSync(join(dir, FAILURE_MARKER), `${JSON.stringify({ model, at: new Date().toISOString(), error: oneLine(error) })}\n`);
    } catch {
      // an unwritable models/ folder is already named in the reason
    }
    return unavailable(model, reason);
  } finally {
    if (staging) rmSync(staging, { recursive: true, force: true });
  }
}

/** Rejects when the archive has not grown for STALL_MS; stops watching once extraction began (local work). */
function stallWatch(archive: string, extracted: string): { stalled: Promise<never>; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    let size = -1;
    let since = Date.now();
    timer = setInterval(() => {
      if (existsSync(extracted)) return clearInterval(timer);
      const now = existsSync(archive) ? statSync(archive).size : 0;
      if (now !== size) [size, since] = [now, Date.now()];
      else if (Date.now() - since >= STALL_MS) {
        clearInterval(timer);
        reject(new Error(`no data from ${DOWNLOAD_HOST} for ${STALL_MS / 1000} s (${size} bytes received)`));
      }
    }, 500);
  });
  return { stalled, stop: () => clearInterval(timer) };
}

// fastembed gives no handle to cancel its request; without this an abandoned download would keep
// a CLI process alive until the transfer or the TCP timeout ends.
async function dropDownloadSockets(): Promise<void> {
  const https = await import('node:https');
  for (const [name, sockets] of Object.entries(https.globalAgent.sockets)) {
    if (name.startsWith(`${DOWNLOAD_HOST}:`)) for (const socket of sockets ?? []) socket.destroy();
  }
}

function install(staged: string, folder: string, storeRoot: string, model: EmbeddingModelName): void {
  try {
    renameSync(staged, folder);
  } catch (error) {
    // Another process may have finished first; anything else in the way is a folder we must not overwrite.
    if (!modelPresent(storeRoot, model)) throw new Error(`${folder} is in the way and incomplete (${oneLine(error)}); remove it`);
  }
}

/** Removes staging folders left by processes that died mid-download. */
function sweepStaging(dir: string): void {
  for (const entry of readdirSync(dir)) {
    const pid = /^\.partial-(\d+)-/.exec(entry)?.[1];
    if (pid && !alive(Number(pid))) rmSync(join(dir, entry), { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The reason to report when this model's last download failed less than RETRY_AFTER_MS ago. */
function recentFailure(storeRoot: string, model: EmbeddingModelName): string | undefined {
  const marker = join(modelsDir(storeRoot), FAILURE_MARKER);
  try {
    const { model: failedModel, at, error } = JSON.parse(readFileSync(marker, 'utf8')) as { model?: string; at?: string; error?: string };
    const age = Date.now() - Date.parse(at ?? '');
    if (failedModel !== model || !(age >= 0 && age < RETRY_AFTER_MS)) return undefined;
    const minutes = Math.ceil((RETRY_AFTER_MS - age) / 60_000);
    return (
      `download of model ${model} failed at ${at} (${error}); not retrying for ${minutes} min: ` +
      `place the model folder in ${modelFolder(storeRoot, model)} by hand, or delete ${marker} to retry now`
    );
  } catch {
    return undefined; // no marker, or an unreadable one: try again
  }
}

// --- helpers --------------------------------------------------------------------------------------

function unavailable(model: EmbeddingModelName, reason: string): EmbedderState {
  return { state: 'unavailable', model, reason };
}

function selectedModelOrDefault(env: NodeJS.ProcessEnv): EmbeddingModelName {
  try {
    return selectedModel(env);
  } catch {
    return DEFAULT_EMBEDDING_MODEL;
  }
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.split('\n').find((l) => l.trim()) ?? 'unknown error';
  return line.trim().slice(0, 300);
}
