import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTinyModel } from '../../embed/tiny-model.js';
import { MODEL_SOURCES } from '../../embed/model-supply.js';
import { LAYOUT } from '../../embed/model-layout.js';
import type { EmbeddingModelName } from '../../embed/embedder.js';

// A loopback stand-in for the Hugging Face Hub (the two calls a model pull makes: the file tree at
// a revision and `resolve` with HTTP ranges) and for an archive mirror, serving the tiny test
// model in the Hub's layout. Faults are switched on per file to test what a real network does.

export type Fault =
  | 'forbidden' // 403 with the XML body a storage bucket sends
  | 'corrupt' // other bytes than the tree states
  | 'truncate' // the full length announced, half sent, then the connection closed (every time)
  | 'cut-once' // like truncate, once: the next (range) request is served
  | 'stall'; // headers, then nothing

export interface ModelHubStub {
  url: string;
  /** Every request: method, path and Range header. */
  requests: Array<{ method: string; path: string; range?: string }>;
  faults: Map<string, Fault>;
  /** Files the tree leaves out (a repository that does not hold them). */
  omit: Set<string>;
  /** Archives served under /archives/<name>: name -> bytes. */
  archives: Map<string, Buffer>;
  close(): Promise<void>;
}

interface Served {
  bytes: Buffer;
  lfs: boolean;
}

/** The tiny model's files as each Hub repository of MODEL_SOURCES would hold them. */
function repoFiles(model: EmbeddingModelName): Map<string, Served> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-hub-stub-'));
  writeTinyModel(dir);
  const files = new Map<string, Served>();
  for (const name of readdirSync(dir)) {
    const served = name === 'model_optimized.onnx' ? LAYOUT[model].onnx : name;
    files.set(served, { bytes: readFileSync(join(dir, name)), lfs: served.endsWith('.onnx') });
  }
  return files;
}

export async function startModelHubStub(): Promise<ModelHubStub> {
  const repos = new Map<string, Map<string, Served>>();
  for (const model of Object.keys(MODEL_SOURCES) as EmbeddingModelName[]) {
    const s = MODEL_SOURCES[model];
    repos.set(`${s.repo}@${s.revision}`, repoFiles(model));
  }
  const requests: ModelHubStub['requests'] = [];
  const faults = new Map<string, Fault>();
  const omit = new Set<string>();
  const archives = new Map<string, Buffer>();
  const cutDone = new Set<string>();

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    const range = req.headers.range;
    requests.push({ method: req.method ?? 'GET', path: url.pathname, ...(range ? { range } : {}) });
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)$/.exec(url.pathname);
    if (tree) {
      const files = repos.get(`${tree[1]}@${decodeURIComponent(tree[2]!)}`);
      if (!files) return json(res, 404, { error: 'Repository not found' });
      const entries = [...files]
        .filter(([path]) => !omit.has(path))
        .map(([path, f]) => ({
          type: 'file',
          path,
          size: f.bytes.length,
          oid: gitOid(f.bytes),
          ...(f.lfs ? { lfs: { oid: createHash('sha256').update(f.bytes).digest('hex'), size: f.bytes.length, pointerSize: 130 } } : {}),
        }));
      return json(res, 200, entries);
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (resolve) {
      const files = repos.get(`${resolve[1]}@${decodeURIComponent(resolve[2]!)}`);
      const path = decodeURIComponent(resolve[3]!);
      const file = files?.get(path);
      if (!file || omit.has(path)) {
        res.writeHead(404, { 'X-Error-Code': 'EntryNotFound', 'content-type': 'application/json' });
        return res.end('{"error":"Entry not found"}');
      }
      const fault = faults.get(path);
      if (fault === 'forbidden') {
        res.writeHead(403, { 'content-type': 'application/xml' });
        return res.end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access denied.</Message></Error>');
      }
      const bytes = fault === 'corrupt' ? Buffer.from(file.bytes.map((b) => b ^ 0xff)) : file.bytes;
      return sendRange(res, bytes, range, path, fault, cutDone);
    }
    const archive = /^\/archives\/(.+)$/.exec(url.pathname);
    if (archive) {
      const bytes = archives.get(archive[1]!);
      if (!bytes) {
        res.writeHead(404, { 'content-type': 'application/xml' });
        return res.end('<Error><Code>NoSuchKey</Code></Error>');
      }
      res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': String(bytes.length) });
      return res.end(bytes);
    }
    json(res, 404, { error: 'not here' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    faults,
    omit,
    archives,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function gitOid(bytes: Buffer): string {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

function sendRange(
  res: ServerResponse,
  bytes: Buffer,
  range: string | undefined,
  path: string,
  fault: Fault | undefined,
  cutDone: Set<string>,
): void {
  const etag = `"${createHash('sha1').update(bytes).digest('hex')}"`;
  const m = range ? /^bytes=(\d+)-(\d*)$/.exec(range) : null;
  const start = m ? Number(m[1]) : 0;
  const end = m && m[2] ? Math.min(Number(m[2]), bytes.length - 1) : bytes.length - 1;
  const body = bytes.subarray(start, end + 1);
  const headers: Record<string, string> = {
    'content-type': 'application/octet-stream',
    etag,
    'content-length': String(body.length),
    'accept-ranges': 'bytes',
  };
  if (m) headers['content-range'] = `bytes ${start}-${end}/${bytes.length}`;
  res.writeHead(m ? 206 : 200, headers);
  // A probe of one byte (the client asks the size first) is always answered.
  const probe = body.length <= 1;
  if (!probe && fault === 'stall') return; // headers only, then silence
  if (!probe && (fault === 'truncate' || (fault === 'cut-once' && !cutDone.has(path)))) {
    cutDone.add(path);
    res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.destroy());
    return;
  }
  res.end(body);
}
