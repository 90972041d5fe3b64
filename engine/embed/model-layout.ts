import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { invalid } from '../errors.js';
import { DEFAULT_EMBEDDING_MODEL, EMBEDDING_MODELS, type EmbeddingModelName } from './embedder.js';

// Where an embedding model lives in a store (or the hub's data folder): `models/fast-<name>/`, the
// layout fastembed loads, with the files it needs. Cheap to import: every recall asks whether the
// model is present. The download marker keeps an offline machine from retrying on every call.

export interface ModelLayout {
  /** The folder under models/. */
  folder: string;
  /** The ONNX graph fastembed loads. */
  onnx: string;
}

export const LAYOUT: Readonly<Record<EmbeddingModelName, ModelLayout>> = {
  'bge-small-en-v1.5': { folder: 'fast-bge-small-en-v1.5', onnx: 'model_optimized.onnx' },
  'all-MiniLM-L6-v2': { folder: 'fast-all-MiniLM-L6-v2', onnx: 'model.onnx' },
};

/** The tokenizer files fastembed reads beside the graph (it refuses to load without any of them). */
export const TOKENIZER_FILES = ['tokenizer.json', 'config.json', 'tokenizer_config.json', 'special_tokens_map.json'] as const;

/** Every file a model folder must hold. */
export function requiredFiles(model: EmbeddingModelName): string[] {
  return [LAYOUT[model].onnx, ...TOKENIZER_FILES];
}

/** What `svc models` writes beside the files: where they came from and their hashes. */
export const PROVENANCE_FILE = '.svc-model.json';

export function modelsDir(root: string): string {
  return join(root, 'models');
}

export function modelFolder(root: string, model: EmbeddingModelName): string {
  return join(modelsDir(root), LAYOUT[model].folder);
}

export function selectedModel(env: NodeJS.ProcessEnv = process.env): EmbeddingModelName {
  const value = env.SVC_EMBED_MODEL?.trim();
  if (!value) return DEFAULT_EMBEDDING_MODEL;
  const model = EMBEDDING_MODELS.find((m) => m === value);
  if (!model) throw invalid(`SVC_EMBED_MODEL must be one of ${EMBEDDING_MODELS.join(', ')} (got "${value}")`);
  return model;
}

export function parseModelName(value: string): EmbeddingModelName {
  const model = EMBEDDING_MODELS.find((m) => m.toLowerCase() === value.trim().toLowerCase());
  if (!model) throw invalid(`unknown model "${value}": svc knows ${EMBEDDING_MODELS.join(', ')}`);
  return model;
}

/** Cheap (two stat calls, no fastembed import): runs on every recall. */
export function modelPresent(root: string, model: EmbeddingModelName): boolean {
  const folder = modelFolder(root, model);
  return existsSync(join(folder, LAYOUT[model].onnx)) && existsSync(join(folder, 'tokenizer.json'));
}

// ------------------------------------------------------------------ the failed-download marker

/** After a failed download, the next automatic try waits this long. */
export const RETRY_AFTER_MS = 60 * 60 * 1000;
const FAILURE_MARKER = '.download-failed.json';

/** This model's last failed download, while it still holds back the next try (RETRY_AFTER_MS). */
export function downloadFailure(
  root: string,
  model: EmbeddingModelName,
): { at: string; error: string; retryAt: string; marker: string } | undefined {
  const marker = join(modelsDir(root), FAILURE_MARKER);
  try {
    const { model: failedModel, at, error } = JSON.parse(readFileSync(marker, 'utf8')) as { model?: string; at?: string; error?: string };
    const when = Date.parse(at ?? '');
    const age = Date.now() - when;
    if (failedModel !== model || !(age >= 0 && age < RETRY_AFTER_MS)) return undefined;
    return { at: at!, error: error ?? 'unknown error', retryAt: new Date(when + RETRY_AFTER_MS).toISOString(), marker };
  } catch {
    return undefined; // no marker, or an unreadable one: try again
  }
}

export function markDownloadFailed(root: string, model: EmbeddingModelName, error: string): void {
  try {
    writeFileSync(join(modelsDir(root), FAILURE_MARKER), `${JSON.stringify({ model, at: new Date().toISOString(), error })}\n`);
  } catch {
    // an unwritable models/ folder is named in the failure itself
  }
}

export function clearDownloadFailure(root: string): void {
  rmSync(join(modelsDir(root), FAILURE_MARKER), { force: true });
}
