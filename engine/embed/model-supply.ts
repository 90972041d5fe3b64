import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { SvcError } from '../errors.js';
import { errorLine } from '../text.js';
import type { EmbeddingModelName } from './embedder.js';
import { extractArchive, fetchArchive, findModelFiles, removeQuietly } from './archive-download.js';
import {
  fetchHubFile,
  hubSettings,
  hubStatements,
  sha256Of,
  SourceError,
  StallGuard,
  type FileStatement,
  type HubRepo,
} from './hub-download.js';
import {
  LAYOUT,
  PROVENANCE_FILE,
  clearDownloadFailure,
  markDownloadFailed,
  modelFolder,
  modelPresent,
  modelsDir,
  requiredFiles,
} from './model-layout.js';
import { processRuns } from '../process-runs.js';

// How an embedding model arrives in a models/ folder (a store's, or the hub's data folder):
// pulled from the organization's mirror when SVC_MODEL_BASE_URL names one, else from the Hugging
// Face Hub at a pinned revision (every file checked against the Hub's hashes, resumable), else
// from the archive bucket fastembed used; or imported from a folder or an archive by hand. Files
// are staged beside the target, the model must load and run (the `probe`), and only then is the
// folder renamed into place: a failed or killed pull never leaves a half model that looks whole.

export interface ModelSource extends HubRepo {
  /** Files of the folder: name in the folder, path in the repository when it differs. */
  files: Array<{ name: string; path?: string }>;
  /** The archive's name in a mirror or in fastembed's bucket. */
  archive: string;
}

// Revisions are commits of the Hub repositories Python fastembed takes these models from.
export const MODEL_SOURCES: Readonly<Record<EmbeddingModelName, ModelSource>> = {
  'bge-small-en-v1.5': {
    repo: 'Qdrant/bge-small-en-v1.5-onnx-Q',
    revision: '52398278842ec682c6f32300af41344b1c0b0bb2',
    files: requiredFiles('bge-small-en-v1.5').map((name) => ({ name })),
    archive: 'fast-bge-small-en-v1.5.tar.gz',
  },
  'all-MiniLM-L6-v2': {
    repo: 'Qdrant/all-MiniLM-L6-v2-onnx',
    revision: '8f518e882455312b086101e60691f5e6e2f05c3c',
    files: requiredFiles('all-MiniLM-L6-v2').map((name) => ({ name })),
    archive: 'sentence-transformers-all-MiniLM-L6-v2.tar.gz',
  },
};

/** Where fastembed's archives were; a last resort (SVC_MODEL_ARCHIVE_URL moves it). */
const ARCHIVE_BUCKET = 'https://storage.googleapis.com/qdrant-fastembed';
/** A source that sends nothing for this long is given up. */
const STALL_MS = 30_000;

/** Loads the staged folder and runs it once; resolves to why it cannot be used, or undefined. */
export type Probe = (folder: string) => Promise<string | undefined>;

export interface SupplyOptions {
  env?: NodeJS.ProcessEnv;
  /** A progress line on stderr (a terminal's). */
  progress?: boolean;
  stallMs?: number;
}

export interface Provenance {
  model: EmbeddingModelName;
  source: 'huggingface' | 'mirror' | 'archive' | 'import';
  from: string;
  revision?: string;
  at: string;
  files: Array<{ name: string; size: number; sha256: string }>;
}

export class ModelSupplyError extends SvcError {
  override name = 'ModelSupplyError';
  constructor(message: string) {
    super('storage', message);
  }
}

/**
 * Fetches `model` into `root`'s models/ folder from the first source that delivers a model that
 * loads; throws one line naming what failed and what to do. The failed-download marker is set on
 * failure (automatic tries wait an hour) and cleared on success.
 */
export async function pullModel(root: string, model: EmbeddingModelName, probe: Probe, opts: SupplyOptions = {}): Promise<Provenance> {
  const env = opts.env ?? process.env;
  const target = modelFolder(root, model);
  mkdirSync(modelsDir(root), { recursive: true });
  const release = lock(root, model);
  try {
    if (modelPresent(root, model))
      return readProvenance(target) ?? { model, source: 'import', from: target, at: new Date().toISOString(), files: [] };
    const source = MODEL_SOURCES[model];
    const mirror = env.SVC_MODEL_BASE_URL?.trim().replace(/\/+$/, '');
    const attempts: Array<{ label: string; run: (staging: string, progress: Progress) => Promise<Omit<Provenance, 'files' | 'at'>> }> =
      mirror
        ? [{ label: 'the mirror', run: (staging, p) => fromArchive(model, `${mirror}/${source.archive}`, 'mirror', staging, p, opts) }]
        : [
            { label: 'the Hugging Face Hub', run: (staging, p) => fromHub(model, staging, p, env, opts) },
            {
              label: "fastembed's archive bucket",
              run: (staging, p) =>
                fromArchive(
                  model,
                  `${(env.SVC_MODEL_ARCHIVE_URL?.trim() || ARCHIVE_BUCKET).replace(/\/+$/, '')}/${source.archive}`,
                  'archive',
                  staging,
                  p,
                  opts,
                ),
            },
          ];
    const failures: string[] = [];
    for (const attempt of attempts) {
      const staging = stagingFolder(root, model);
      const progress = new Progress(model, opts.progress === true);
      try {
        const origin = await attempt.run(staging, progress);
        progress.done();
        const provenance = await install(root, model, staging, origin, probe);
        clearDownloadFailure(root);
        return provenance;
      } catch (err) {
        progress.done();
        if (!(err instanceof SourceError || err instanceof ModelSupplyError)) throw err;
        failures.push(err.message);
      }
    }
    const hint = mirror
      ? 'check SVC_MODEL_BASE_URL, or bring the model with svc models import <folder-or-archive>'
      : 'svc models pull tries again (a cut-off download resumes); HF_ENDPOINT or SVC_MODEL_BASE_URL point at a mirror; svc models import <folder-or-archive> takes a copy made elsewhere';
    const message = `model ${model} did not arrive: ${failures.join('; then ')}. ${hint}`;
    markDownloadFailed(root, model, failures[0] ?? 'unknown error');
    throw new ModelSupplyError(message);
  } finally {
    release();
  }
}

/** Installs a model from a folder (the files fastembed needs) or a .tar.gz archive made elsewhere. */
export async function importModel(root: string, model: EmbeddingModelName, from: string, probe: Probe): Promise<Provenance> {
  if (!existsSync(from)) throw new ModelSupplyError(`${from} does not exist`);
  mkdirSync(modelsDir(root), { recursive: true });
  const release = lock(root, model);
  try {
    if (existsSync(modelFolder(root, model)))
      throw new ModelSupplyError(`${modelFolder(root, model)} is already there: svc models remove ${model} first`);
    const staging = stagingFolder(root, model);
    const isFolder = statSync(from).isDirectory();
    const unpacked = isFolder ? from : join(staging, '.unpacked');
    if (!isFolder) await extractArchive(from, unpacked).catch((err: Error) => Promise.reject(new ModelSupplyError(err.message)));
    const found = findModelFiles(unpacked, LAYOUT[model].onnx);
    if (!found) throw new ModelSupplyError(`no ${LAYOUT[model].onnx} with a tokenizer.json in ${from}: is it ${model}?`);
    stageFiles(model, found, staging);
    if (!isFolder) removeQuietly(unpacked);
    return await install(root, model, staging, { model, source: 'import', from }, probe);
  } finally {
    release();
  }
}

/** Deletes a model folder (and anything staged for it); false when there was none. */
export function removeModel(root: string, model: EmbeddingModelName): boolean {
  const target = modelFolder(root, model);
  const existed = existsSync(target);
  removeQuietly(target);
  removeQuietly(stagingFolder(root, model));
  return existed;
}

export function readProvenance(folder: string): Provenance | undefined {
  try {
    return JSON.parse(readFileSync(join(folder, PROVENANCE_FILE), 'utf8')) as Provenance;
  } catch {
    return undefined;
  }
}

/** Bytes under a folder (for `svc models list`). */
export function folderBytes(folder: string): number {
  if (!existsSync(folder)) return 0;
  return readdirSync(folder, { withFileTypes: true }).reduce(
    (n, e) => n + (e.isFile() ? statSync(join(folder, e.name)).size : e.isDirectory() ? folderBytes(join(folder, e.name)) : 0),
    0,
  );
}

// ------------------------------------------------------------------ sources

async function fromHub(
  model: EmbeddingModelName,
  staging: string,
  progress: Progress,
  env: NodeJS.ProcessEnv,
  opts: SupplyOptions,
): Promise<Omit<Provenance, 'files' | 'at'>> {
  const source = MODEL_SOURCES[model];
  const hub = hubSettings(env);
  const guard = new StallGuard(opts.stallMs ?? STALL_MS);
  try {
    const hf = await import('@huggingface/hub');
    const stated = await hubStatements(hf, source, hub, guard);
    const wanted: Array<{ name: string; statement: FileStatement }> = [];
    const missing: string[] = [];
    for (const f of source.files) {
      const statement = stated.get(f.path ?? f.name);
      if (statement) wanted.push({ name: f.name, statement });
      else missing.push(f.name);
    }
    // special_tokens_map.json says again what tokenizer_config.json says; some exports leave it out.
    const derivable = missing.filter((m) => m !== 'special_tokens_map.json');
    if (derivable.length)
      throw new SourceError(
        `${new URL(hub.endpoint).host} has no ${derivable.join(', ')} in ${source.repo}@${source.revision.slice(0, 12)}`,
      );
    progress.total(wanted.reduce((n, w) => n + w.statement.size, 0));
    mkdirSync(staging, { recursive: true });
    for (const w of wanted) await fetchHubFile(hf, source, hub, w.statement, join(staging, w.name), guard, (n) => progress.add(n));
    if (missing.length) deriveSpecialTokensMap(staging);
    return { model, source: 'huggingface', from: `${hub.endpoint}/${source.repo}`, revision: source.revision };
  } finally {
    guard.stop();
  }
}

async function fromArchive(
  model: EmbeddingModelName,
  url: string,
  kind: 'mirror' | 'archive',
  staging: string,
  progress: Progress,
  opts: SupplyOptions,
): Promise<Omit<Provenance, 'files' | 'at'>> {
  const guard = new StallGuard(opts.stallMs ?? STALL_MS);
  const work = join(dirname(staging), `.archive-${LAYOUT[model].folder}-${process.pid}`);
  try {
    mkdirSync(work, { recursive: true });
    const file = join(work, 'model.tar.gz');
    await fetchArchive(url, file, guard, (n) => progress.add(n));
    await extractArchive(file, join(work, 'unpacked'));
    const found = findModelFiles(join(work, 'unpacked'), LAYOUT[model].onnx);
    if (!found) throw new SourceError(`the archive from ${new URL(url).host} holds no ${LAYOUT[model].onnx} with a tokenizer.json`);
    stageFiles(model, found, staging);
    return { model, source: kind, from: url };
  } finally {
    guard.stop();
    removeQuietly(work);
  }
}

// ------------------------------------------------------------------ staging and installing

function stagingFolder(root: string, model: EmbeddingModelName): string {
  return join(modelsDir(root), `.partial-${LAYOUT[model].folder}`);
}

/** Copies the files fastembed needs from `from` into the staging folder (deriving the tokens map if absent). */
function stageFiles(model: EmbeddingModelName, from: string, staging: string): void {
  mkdirSync(staging, { recursive: true });
  for (const name of requiredFiles(model)) {
    if (existsSync(join(from, name))) copyFileSync(join(from, name), join(staging, name));
    else if (name !== 'special_tokens_map.json') throw new SourceError(`${name} is missing from ${from}`);
  }
  if (!existsSync(join(staging, 'special_tokens_map.json'))) deriveSpecialTokensMap(staging);
}

/** special_tokens_map.json from tokenizer_config.json, which names the same tokens. */
function deriveSpecialTokensMap(folder: string): void {
  let config: Record<string, unknown>;
  try {
    config = JSON.parse(readFileSync(join(folder, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    throw new SourceError('special_tokens_map.json is missing and tokenizer_config.json cannot be read to make it');
  }
  const map: Record<string, unknown> = {};
  for (const key of ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token']) {
    if (config[key] !== undefined && config[key] !== null) map[key] = config[key];
  }
  writeFileSync(join(folder, 'special_tokens_map.json'), `${JSON.stringify(map, null, 2)}\n`);
}

/** Probes the staged folder, records where it came from, and renames it into place. */
async function install(
  root: string,
  model: EmbeddingModelName,
  staging: string,
  origin: Omit<Provenance, 'files' | 'at'>,
  probe: Probe,
): Promise<Provenance> {
  const problem = await probe(staging);
  if (problem) {
    removeQuietly(staging);
    throw new ModelSupplyError(`the model from ${origin.from} does not load: ${problem}`);
  }
  const files = await Promise.all(
    requiredFiles(model).map(async (name) => ({
      name,
      size: statSync(join(staging, name)).size,
      sha256: await sha256Of(join(staging, name)),
    })),
  );
  for (const entry of readdirSync(staging)) if (![...requiredFiles(model)].includes(entry)) removeQuietly(join(staging, entry));
  const provenance: Provenance = { ...origin, at: new Date().toISOString(), files };
  writeFileSync(join(staging, PROVENANCE_FILE), `${JSON.stringify(provenance, null, 2)}\n`);
  const target = modelFolder(root, model);
  if (existsSync(target)) {
    removeQuietly(staging);
    if (modelPresent(root, model)) return readProvenance(target) ?? provenance;
    throw new ModelSupplyError(`${target} is in the way and incomplete: svc models remove ${model}, then try again`);
  }
  renameSync(staging, target);
  return provenance;
}

// ------------------------------------------------------------------ one fetch at a time

/** One pull or import per model and folder at a time, across processes (a stale lock is taken over). */
function lock(root: string, model: EmbeddingModelName): () => void {
  const file = join(modelsDir(root), `.pull-${LAYOUT[model].folder}.lock`);
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new ModelSupplyError(`cannot write in ${modelsDir(root)}: ${errorLine(err)}`);
      const pid = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(pid) && pid > 0 && processRuns(pid))
        throw new ModelSupplyError(
          `another process (pid ${pid}) is fetching model ${model} into ${modelsDir(root)}; try again when it is done`,
        );
      unlinkSync(file);
    }
  }
  throw new ModelSupplyError(`cannot lock ${file}`);
}

/** A one-line progress bar on a terminal: `fetching bge-small-en-v1.5  12.3 / 66.5 MB`. */
class Progress {
  private bytes = 0;
  private size = 0;
  private last = 0;
  private shown = false;

  constructor(
    private readonly model: string,
    private readonly on: boolean,
  ) {}

  total(size: number): void {
    this.size = size;
  }

  add(n: number): void {
    this.bytes += n;
    if (!this.on || Date.now() - this.last < 200) return;
    this.last = Date.now();
    const mb = (x: number) => (x / 1e6).toFixed(1);
    process.stderr.write(`\rfetching ${this.model}  ${mb(this.bytes)}${this.size ? ` / ${mb(this.size)}` : ''} MB `);
    this.shown = true;
  }

  done(): void {
    if (this.shown) process.stderr.write('\n');
    this.shown = false;
  }
}
