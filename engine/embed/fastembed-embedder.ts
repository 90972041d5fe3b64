// The fastembed provider of the dense leg. The model lives in the store's `models/` folder in the
// layout fastembed uses (model-layout.ts), fetched on the first hybrid call (model-supply.ts),
// with `svc models`, or placed there by hand on an air-gapped machine. Loading never throws: a
// missing or broken model becomes an `unavailable` state with a one-line reason that recall and
// status report verbatim. fastembed does the inference only; it never downloads.

import { resolve } from 'node:path';
import type { FlagEmbedding } from 'fastembed';
import { DEFAULT_EMBEDDING_MODEL, type Embedder, type EmbedderState, type EmbeddingModelName } from './embedder.js';
import { LAYOUT, downloadFailure, modelFolder, modelPresent, selectedModel } from './model-layout.js';
import { errorLine } from '../text.js';

// fastembed pads every input to maxLength; engrams are short, so 128 tokens is plenty and much faster.
const MAX_TOKENS = 128;
// Bounds the attention activations of one run (batch x 12 heads x 128 x 128 floats).
const BATCH_SIZE = 32;

export interface LoadOptions {
  /** Fetch the model when it is not in `models/` (hybrid recall does; hooks and status do not). */
  download: boolean;
  /** Show a progress line on stderr while downloading. */
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

  if (modelPresent(storeRoot, model))
    return once(
      opened,
      key,
      () => open(model, folder),
      (s) => s.state === 'ready',
    );
  if (!opts.download) {
    return unavailable(model, `model ${model} is not in ${folder} yet`);
  }
  const failed = downloadFailure(storeRoot, model);
  if (failed) {
    const reason = `download of model ${model} failed at ${failed.at} (${failed.error}); next try after ${failed.retryAt} (svc models pull tries now)`;
    return { state: 'unavailable', model, reason, retryAt: failed.retryAt };
  }
  return once(
    downloads,
    key,
    async () => {
      const { pullModel } = await import('./model-supply.js');
      let loaded: EmbedderState | undefined;
      // The staged model must load and run before it is installed; that load is the one kept.
      const probe = async (staged: string) => {
        loaded = await open(model, staged);
        return loaded.state === 'ready' ? undefined : loaded.reason;
      };
      try {
        await pullModel(storeRoot, model, probe, { env, progress: opts.progress });
      } catch (err) {
        return unavailable(model, errorLine(err, 1000));
      }
      const state = loaded?.state === 'ready' ? loaded : await open(model, folder);
      if (state.state === 'ready') opened.set(key, Promise.resolve(state));
      return state;
    },
    () => false,
  );
}

/** The supply's check of a staged model folder: it loads with fastembed and runs. */
export function modelProbe(model: EmbeddingModelName): (folder: string) => Promise<string | undefined> {
  return async (folder) => {
    const state = await open(model, folder);
    return state.state === 'ready' ? undefined : state.reason;
  };
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
    return unavailable(model, `model ${model} in ${folder} could not be loaded: ${errorLine(error)}`);
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
