// Cross-encoder rerankers: a model reads (query, passage) together and gives one relevance logit
// per pair, which reorders recall's top candidates. Like the embedders, a reranker is a folder
// under the store's `models/` (model.onnx + tokenizer.json, placed by hand: svc never downloads a
// reranker), loaded with the real tokenizer and onnxruntime. Recall reranks only when
// SVC_RERANKER names one; `svc rerank-eval` tells whether it helps on this store.

import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import type { EngramDoc } from '../model/engram-types.js';
import { invalid } from '../errors.js';
import { errorLine, round } from '../text.js';

export const RERANKER_MODELS = ['bge-reranker-v2-m3', 'ms-marco-minilm-l6'] as const;
export type RerankerName = (typeof RERANKER_MODELS)[number];
export type RerankerTier = 'quality' | 'tiny';

export interface RerankerInfo {
  tier: RerankerTier;
  /** Folder under `<store>/models/`. */
  folder: string;
  /** Where the files come from, for the "not installed" message. */
  source: string;
}

export const RERANKERS: Readonly<Record<RerankerName, RerankerInfo>> = {
  'bge-reranker-v2-m3': {
    tier: 'quality',
    folder: 'reranker-bge-reranker-v2-m3',
    source:
      'an ONNX export of BAAI/bge-reranker-v2-m3, e.g. onnx-community/bge-reranker-v2-m3-ONNX; keep model.onnx_data beside model.onnx if the export has one',
  },
  'ms-marco-minilm-l6': {
    tier: 'tiny',
    folder: 'reranker-ms-marco-minilm-l6',
    source: 'an ONNX export of cross-encoder/ms-marco-MiniLM-L-6-v2, e.g. onnx/model.onnx of Xenova/ms-marco-MiniLM-L-6-v2',
  },
};

export const RERANKER_ONNX = 'model.onnx';
export const RERANKER_TOKENIZER = 'tokenizer.json';
/** Candidates reranked per query: the head of recall's ranking, where reordering matters. */
export const RERANK_DEPTH = 20;
/** Pairs longer than this are truncated (longest side first); engrams are short. */
const MAX_TOKENS = 512;
const BATCH_SIZE = 16;

export interface Reranker {
  readonly name: RerankerName;
  readonly tier: RerankerTier;
  /** One relevance logit per passage for this query, in order; higher is more relevant. */
  score(query: string, passages: string[]): Promise<number[]>;
}

export type RerankerState =
  { state: 'ready'; name: RerankerName; reranker: Reranker } | { state: 'unavailable'; name: RerankerName; reason: string };

export function rerankerFolder(storeRoot: string, name: RerankerName): string {
  return join(storeRoot, 'models', RERANKERS[name].folder);
}

/** Cheap (two stat calls): the files a reranker needs are in place. */
export function rerankerPresent(storeRoot: string, name: RerankerName): boolean {
  const folder = rerankerFolder(storeRoot, name);
  return existsSync(join(folder, RERANKER_ONNX)) && existsSync(join(folder, RERANKER_TOKENIZER));
}

export function parseRerankerName(value: string, what = '--reranker'): RerankerName {
  const name = RERANKER_MODELS.find((m) => m === value.trim().toLowerCase());
  if (!name) throw invalid(`${what} must be one of ${RERANKER_MODELS.join(', ')} (got "${value}")`);
  return name;
}

/** The reranker SVC_RERANKER enables, or undefined when it is unset, empty, `off` or `none`. */
export function selectedReranker(env: NodeJS.ProcessEnv = process.env): RerankerName | undefined {
  const value = env.SVC_RERANKER?.trim();
  if (!value || /^(off|none|0|false)$/i.test(value)) return undefined;
  return parseRerankerName(value, 'SVC_RERANKER');
}

export function notInstalledReason(storeRoot: string, name: RerankerName): string {
  return `reranker ${name} is not installed: place ${RERANKER_ONNX} and ${RERANKER_TOKENIZER} in ${rerankerFolder(storeRoot, name)} (${RERANKERS[name].source}); svc does not download rerankers`;
}

// A long-lived process (the MCP server) loads each reranker once; only ready states stay cached,
// so a model placed by hand later is picked up.
const opened = new Map<string, Promise<RerankerState>>();

/** Loads a reranker from the store's models/ folder. Never throws: failures come back `unavailable`. */
export async function loadReranker(storeRoot: string, name: RerankerName): Promise<RerankerState> {
  if (!rerankerPresent(storeRoot, name)) return { state: 'unavailable', name, reason: notInstalledReason(storeRoot, name) };
  const folder = rerankerFolder(storeRoot, name);
  const key = `${resolve(folder)}\n${name}`;
  let pending = opened.get(key);
  if (!pending) {
    pending = open(name, folder);
    opened.set(key, pending);
    void pending.then((s) => s.state === 'ready' || opened.delete(key));
  }
  return pending;
}

async function open(name: RerankerName, folder: string): Promise<RerankerState> {
  try {
    const [ort, { Tokenizer }] = await Promise.all([import('onnxruntime-node'), import('@anush008/tokenizers')]);
    const tokenizer = Tokenizer.fromFile(join(folder, RERANKER_TOKENIZER));
    const configured = readJson(join(folder, 'tokenizer_config.json'))?.model_max_length;
    const maxTokens = Math.min(MAX_TOKENS, typeof configured === 'number' ? configured : MAX_TOKENS);
    tokenizer.disablePadding(); // a batch is padded here, to its own longest pair
    tokenizer.setTruncation(maxTokens);
    const padId = padTokenId(folder, tokenizer);
    // Loaded by path, so an external-data file (model.onnx_data) beside it is found.
    const session = await ort.InferenceSession.create(join(folder, RERANKER_ONNX), { graphOptimizationLevel: 'all' });
    const inputs = session.inputNames;
    for (const input of inputs) {
      // eslint-disable-next-line no-restricted-syntax -- loadReranker catches it and reports the reranker unavailable
      if (!['input_ids', 'attention_mask', 'token_type_ids'].includes(input)) throw new Error(`unexpected model input "${input}"`);
    }
    const output = session.outputNames[0];
    // eslint-disable-next-line no-restricted-syntax -- loadReranker catches it and reports the reranker unavailable
    if (!output) throw new Error('the model has no output');

    const runBatch = async (query: string, passages: string[]): Promise<number[]> => {
      const encodings = await Promise.all(passages.map((p) => tokenizer.encode(query, p)));
      const width = Math.max(...encodings.map((e) => e.getLength()));
      const ids = new BigInt64Array(passages.length * width).fill(BigInt(padId));
      const mask = new BigInt64Array(passages.length * width);
      const types = new BigInt64Array(passages.length * width);
      encodings.forEach((e, row) => {
        const [id, m, t] = [e.getIds(), e.getAttentionMask(), e.getTypeIds()];
        for (let j = 0; j < id.length; j++) {
          ids[row * width + j] = BigInt(id[j]!);
          mask[row * width + j] = BigInt(m[j]!);
          types[row * width + j] = BigInt(t[j] ?? 0);
        }
      });
      const dims = [passages.length, width];
      const feeds: InferenceSession.FeedsType = Object.fromEntries(
        inputs.map((input) => [
          input,
          new ort.Tensor('int64', input === 'input_ids' ? ids : input === 'attention_mask' ? mask : types, dims),
        ]),
      );
      const result = (await session.run(feeds))[output]!;
      const values = result.data as Float32Array;
      // [batch, 1] (one logit), [batch] or [batch, k] (classes: the last one is "relevant").
      const k = result.dims.length > 1 ? Number(result.dims[result.dims.length - 1]) : 1;
      return passages.map((_, row) => Number(values[row * k + (k - 1)]));
    };

    const reranker: Reranker = {
      name,
      tier: RERANKERS[name].tier,
      async score(query, passages) {
        const out: number[] = [];
        for (let i = 0; i < passages.length; i += BATCH_SIZE) out.push(...(await runBatch(query, passages.slice(i, i + BATCH_SIZE))));
        return out;
      },
    };
    // A model can load and still fail to run: one pair proves it gives a finite score.
    const [probe] = await reranker.score('probe', ['probe passage']);
    // eslint-disable-next-line no-restricted-syntax -- loadReranker catches it and reports the reranker unavailable
    if (probe === undefined || !Number.isFinite(probe)) throw new Error(`the model gave no finite score (${probe})`);
    return { state: 'ready', name, reranker };
  } catch (error) {
    return { state: 'unavailable', name, reason: `reranker ${name} in ${folder} could not be loaded: ${errorLine(error)}` };
  }
}

function padTokenId(folder: string, tokenizer: { tokenToId(token: string): number | null }): number {
  const configured = readJson(join(folder, 'config.json'))?.pad_token_id;
  if (typeof configured === 'number') return configured;
  for (const token of ['[PAD]', '<pad>']) {
    const id = tokenizer.tokenToId(token);
    if (id !== null && id !== undefined) return id;
  }
  return 0;
}

function readJson(path: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- reranking recall hits

/** What a reranker reads of an engram. */
export function passageOf(engram: EngramDoc): string {
  return engram.statement;
}

export interface RerankOptions {
  /** Use this reranker; otherwise the one SVC_RERANKER names, loaded from `storeRoot`. */
  reranker?: Reranker;
  storeRoot?: string;
  env?: NodeJS.ProcessEnv;
  /** How many of the top hits to reorder (default RERANK_DEPTH); the rest keep their order after them. */
  depth?: number;
}

/** A cross-encoder to rerank recall's head with, loaded from `root`'s models/ (recall and inject take it). */
export interface RerankSetting {
  name: RerankerName;
  root: string;
  /** Give up on it (the order stays recall's) when loading and scoring take longer: hooks answer in time. */
  budgetMs?: number;
}

export interface RerankReport {
  /** `ran`; `off` when SVC_RERANKER is unset; `unavailable` when it names a model that cannot load. */
  state: 'ran' | 'off' | 'unavailable';
  model?: RerankerName;
  reason?: string;
  /** Time spent scoring, in milliseconds. */
  ms?: number;
}

export type Reranked<H> = H & { rerank_score?: number };

export interface RerankOutcome<H> {
  hits: Array<Reranked<H>>;
  reranker: RerankReport;
}

/**
 * The optional rerank step of recall: reorders the top `depth` hits by the cross-encoder's score
 * for (query, statement), ties keeping recall's order; hits below the depth follow unchanged.
 * With no reranker given and SVC_RERANKER unset it returns the hits as they are (state `off`);
 * a named reranker that cannot load leaves them as they are too and says why (`unavailable`).
 */
export async function rerank<H extends { engram: EngramDoc }>(
  hits: H[],
  query: string,
  opts: RerankOptions = {},
): Promise<RerankOutcome<H>> {
  let reranker = opts.reranker;
  if (!reranker) {
    const name = selectedReranker(opts.env ?? process.env);
    if (!name) return { hits: [...hits], reranker: { state: 'off' } };
    if (!opts.storeRoot) throw invalid('rerank: storeRoot is needed to load the reranker SVC_RERANKER names');
    const state = await loadReranker(opts.storeRoot, name);
    if (state.state === 'unavailable') return { hits: [...hits], reranker: { state: 'unavailable', model: name, reason: state.reason } };
    reranker = state.reranker;
  }
  const depth = Math.max(0, opts.depth ?? RERANK_DEPTH);
  const head = hits.slice(0, depth);
  const started = performance.now();
  const scores = head.length
    ? await reranker.score(
        query,
        head.map((h) => passageOf(h.engram)),
      )
    : [];
  const ms = round(performance.now() - started, 2);
  const order = head.map((hit, i) => ({ hit, i, score: scores[i]! }));
  order.sort((a, b) => b.score - a.score || a.i - b.i);
  return {
    hits: [...order.map((o) => ({ ...o.hit, rerank_score: round(o.score, 4) })), ...hits.slice(depth)],
    reranker: { state: 'ran', model: reranker.name, ms },
  };
}

// ---------------------------------------------------------------- wiring into recall's callers

/**
 * The reranker a front end asks recall for: the one SVC_RERANKER names, loaded from `root`'s
 * models/ folder (the store, or the hub's data folder); undefined when it is unset.
 */
export function rerankerSetting(
  root: string,
  env: NodeJS.ProcessEnv = process.env,
  budgetMs?: number,
): { name: RerankerName; root: string; budgetMs?: number } | undefined {
  const name = selectedReranker(env);
  return name ? { name, root, ...(budgetMs === undefined ? {} : { budgetMs }) } : undefined;
}
