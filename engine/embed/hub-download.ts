import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, openSync, renameSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';

// Model files from the Hugging Face Hub (or a mirror that speaks its API: HF_ENDPOINT), through
// @huggingface/hub: the Hub states each file's size and hash at a pinned revision (sha256 for
// large files, the git blob id for small ones), every file is checked against that statement,
// and a download cut off part way resumes from its `.part` file with an HTTP range request.

export interface HubRepo {
  repo: string;
  /** A commit id: what the Hub states for it never changes. */
  revision: string;
}

export interface HubSettings {
  endpoint: string;
  token?: string;
}

export function hubSettings(env: NodeJS.ProcessEnv): HubSettings {
  const endpoint = (env.HF_ENDPOINT?.trim() || 'https://huggingface.co').replace(/\/+$/, '');
  const token = env.HF_TOKEN?.trim() || undefined;
  return { endpoint, ...(token ? { token } : {}) };
}

export interface FileStatement {
  path: string;
  size: number;
  sha256?: string;
  /** The git blob id (sha1 of "blob <size>\0<bytes>") of a file stored in git itself. */
  gitOid?: string;
}

/** A failure of one source, as one line; the supply tries the next source. */
export class SourceError extends Error {
  override name = 'SourceError';
}

/** Aborts requests that stop sending bytes (a stalled server must not hang a recall). */
export class StallGuard {
  private readonly controllers = new Set<AbortController>();
  private timer: NodeJS.Timeout | undefined;
  stalled = false;

  constructor(private readonly ms: number) {}

  readonly fetch: typeof fetch = (input, init) => {
    const c = new AbortController();
    this.controllers.add(c);
    this.touch();
    return fetch(input, { ...init, signal: c.signal });
  };

  /** Bytes arrived (or a request began): the clock starts again. */
  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.stalled = true;
      for (const c of this.controllers) c.abort();
    }, this.ms);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

type HubModule = typeof import('@huggingface/hub');

function describe(err: unknown, what: string, hub: HubSettings): SourceError {
  const host = new URL(hub.endpoint).host;
  const status = (err as { statusCode?: number }).statusCode;
  if (status)
    return new SourceError(
      `${host} answered ${status} for ${what}${status === 401 || status === 403 ? ' (a token in HF_TOKEN, or a mirror?)' : ''}`,
    );
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return new SourceError(
    `${host} could not be reached for ${what}: ${cause?.code ?? cause?.message ?? (err as Error).message.split('\n')[0]}`,
  );
}

/** The Hub's statement of every file at the revision. */
export async function hubStatements(
  hf: HubModule,
  repo: HubRepo,
  hub: HubSettings,
  guard: StallGuard,
): Promise<Map<string, FileStatement>> {
  const out = new Map<string, FileStatement>();
  try {
    for await (const e of hf.listFiles({
      repo: { type: 'model', name: repo.repo },
      revision: repo.revision,
      recursive: true,
      hubUrl: hub.endpoint,
      accessToken: hub.token,
      fetch: guard.fetch,
    })) {
      if (e.type !== 'file') continue;
      out.set(e.path, { path: e.path, size: e.size, ...(e.lfs ? { sha256: e.lfs.oid } : e.oid ? { gitOid: e.oid } : {}) });
    }
  } catch (err) {
    throw describe(err, `the file list of ${repo.repo}@${repo.revision.slice(0, 12)}`, hub);
  }
  return out;
}

/**
 * Fetches one file to `dest`: resumes `dest.part` when an earlier try was cut off, checks the
 * size and hash the Hub states, and only then gives the file its name. A file that does not match
 * is deleted (the next try starts over).
 */
export async function fetchHubFile(
  hf: HubModule,
  repo: HubRepo,
  hub: HubSettings,
  want: FileStatement,
  dest: string,
  guard: StallGuard,
  onBytes: (n: number) => void,
): Promise<void> {
  if (existsSync(dest) && (await matches(dest, want))) return onBytes(want.size);
  rmSync(dest, { force: true });
  const part = `${dest}.part`;
  let have = existsSync(part) ? statSync(part).size : 0;
  if (have > want.size) {
    truncateSync(part, 0);
    have = 0;
  }
  onBytes(have);
  const what = `${repo.repo} ${want.path}`;
  if (have < want.size) {
    let blob: Blob | null;
    try {
      blob = await hf.downloadFile({
        repo: { type: 'model', name: repo.repo },
        path: want.path,
        revision: repo.revision,
        hubUrl: hub.endpoint,
        accessToken: hub.token,
        xet: false,
        fetch: guard.fetch,
      });
    } catch (err) {
      throw describe(err, what, hub);
    }
    if (!blob) throw new SourceError(`${new URL(hub.endpoint).host} has no ${want.path} in ${repo.repo}@${repo.revision.slice(0, 12)}`);
    const fd = openSync(part, 'a');
    try {
      const reader = (have > 0 ? blob.slice(have) : blob).stream().getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        guard.touch();
        writeSync(fd, value);
        have += value.byteLength;
        onBytes(value.byteLength);
        if (have > want.size) break;
      }
    } catch (err) {
      const got = statSync(part).size;
      if (guard.stalled)
        throw new SourceError(
          `${new URL(hub.endpoint).host} stopped sending ${want.path} at ${got} of ${want.size} bytes; the next try resumes`,
        );
      const e = describe(err, what, hub);
      e.message += ` (${got} of ${want.size} bytes kept; the next try resumes)`;
      throw e;
    } finally {
      closeSync(fd);
    }
  }
  const size = statSync(part).size;
  if (size !== want.size) {
    if (size > want.size) rmSync(part, { force: true });
    throw new SourceError(
      `${want.path} from ${new URL(hub.endpoint).host} ended at ${size} of the ${want.size} bytes the Hub states${size < want.size ? '; the next try resumes' : ': deleted'}`,
    );
  }
  if (!(await matches(part, want))) {
    rmSync(part, { force: true });
    throw new SourceError(
      `${want.path} from ${new URL(hub.endpoint).host} does not match the ${want.sha256 ? 'sha256' : 'git blob id'} the Hub states for it: deleted`,
    );
  }
  renameSync(part, dest);
}

/** Whether a file has the size and the hash stated for it. */
async function matches(file: string, want: FileStatement): Promise<boolean> {
  if (statSync(file).size !== want.size) return false;
  if (want.sha256) return (await digest(file, 'sha256')) === want.sha256.toLowerCase();
  if (want.gitOid) return (await digest(file, 'sha1', `blob ${want.size}\0`)) === want.gitOid.toLowerCase();
  return false; // nothing to check it against: never trusted
}

function digest(file: string, algorithm: 'sha256' | 'sha1', prefix?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash(algorithm);
    if (prefix) hash.update(prefix);
    createReadStream(file)
      .on('data', (d) => hash.update(d))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/** sha256 of a file, for the provenance record. */
export function sha256Of(file: string): Promise<string> {
  return digest(file, 'sha256');
}
