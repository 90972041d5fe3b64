import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SourceError, type StallGuard } from './hub-download.js';

// Model archives (`<folder>.tar.gz`): the organization's own mirror (SVC_MODEL_BASE_URL), the
// bucket fastembed used to fetch from (a last resort: it has been failing in public reports) and
// `svc models import <archive>`. There is no stated hash for these: the HTTP status and type are
// checked, the size is capped, and the model must then load and run before it is installed.

/** Larger than any model svc knows, by far. */
const MAX_ARCHIVE_BYTES = 2 * 1024 ** 3;

export async function fetchArchive(url: string, dest: string, guard: StallGuard, onBytes: (n: number) => void): Promise<void> {
  const { host } = new URL(url);
  const name = url.slice(url.lastIndexOf('/') + 1);
  let res: Response;
  try {
    res = await guard.fetch(url, { redirect: 'follow' });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    throw new SourceError(`${host} could not be reached for ${name}: ${cause?.code ?? (err as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new SourceError(`${host} answered ${res.status} for ${name}`);
  }
  const type = res.headers.get('content-type') ?? '';
  if (/text\/|xml|json/i.test(type)) {
    await res.body?.cancel();
    throw new SourceError(`${host} sent ${type.split(';')[0]} for ${name}, not an archive`);
  }
  const fd = openSync(dest, 'w');
  let size = 0;
  try {
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      guard.touch();
      size += value.byteLength;
      if (size > MAX_ARCHIVE_BYTES)
        throw new SourceError(`${name} from ${host} is larger than ${MAX_ARCHIVE_BYTES} bytes: not a model archive`);
      writeSync(fd, value);
      onBytes(value.byteLength);
    }
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError(
      guard.stalled ? `${host} stopped sending ${name} at ${size} bytes` : `${name} from ${host} was cut off at ${size} bytes`,
    );
  } finally {
    closeSync(fd);
  }
  const expected = Number(res.headers.get('content-length'));
  if (Number.isFinite(expected) && expected > 0 && statSync(dest).size !== expected) {
    throw new SourceError(`${name} from ${host} ended at ${statSync(dest).size} of ${expected} bytes`);
  }
}

/** Unpacks a .tar.gz into `dir`: regular files and folders only, nothing outside `dir`. */
export async function extractArchive(file: string, dir: string): Promise<void> {
  const tar = await import('tar');
  mkdirSync(dir, { recursive: true });
  try {
    await tar.x({
      file,
      cwd: dir,
      strict: true,
      filter: (_path, entry) => 'type' in entry && (entry.type === 'File' || entry.type === 'Directory'),
    });
  } catch (err) {
    throw new SourceError(
      `${file.slice(file.lastIndexOf('/') + 1)} is not a readable .tar.gz archive (${(err as Error).message.split('\n')[0]})`,
    );
  }
}

/** The folder (this one or one below, two levels at most) that holds `onnx` and tokenizer.json. */
export function findModelFiles(dir: string, onnx: string, depth = 2): string | undefined {
  if (existsSync(join(dir, onnx)) && existsSync(join(dir, 'tokenizer.json'))) return dir;
  if (depth === 0) return undefined;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const found = findModelFiles(join(dir, entry.name), onnx, depth - 1);
    if (found) return found;
  }
  return undefined;
}

export function removeQuietly(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
