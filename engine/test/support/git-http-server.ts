import { spawn, execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';

// A real git server for tests: node:http on 127.0.0.1 (port 0) bridging every request to
// `git http-backend` as CGI, serving the bare repositories under one project root. Smart HTTP
// only (upload-pack and receive-pack); receive-pack is enabled per repository.

export const GIT_HTTP_BACKEND = process.env.GIT_HTTP_BACKEND ?? '/usr/lib/git-core/git-http-backend';

export interface GitHttpServer {
  /** http://127.0.0.1:<port> */
  readonly baseUrl: string;
  /** Folder holding the bare repositories. */
  readonly projectRoot: string;
  /** Creates `<name>.git` (bare, receive-pack on) and returns its clone address. */
  createRepo(name: string): { url: string; dir: string };
  /** Requests served so far, e.g. `POST /store.git/git-receive-pack 200`. */
  readonly log: string[];
  close(): Promise<void>;
}

export async function startGitHttpServer(projectRoot = mkdtempSync(join(tmpdir(), 'svc-git-remote-'))): Promise<GitHttpServer> {
  mkdirSync(projectRoot, { recursive: true });
  const log: string[] = [];
  const server = createServer((req, res) => {
    handle(projectRoot, req, res, log).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err.message));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    baseUrl,
    projectRoot,
    log,
    createRepo(name) {
      const dir = join(projectRoot, `${name}.git`);
      execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', dir]);
      execFileSync('git', ['-C', dir, 'config', 'http.receivepack', 'true']);
      return { url: `${baseUrl}/${name}.git`, dir };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(projectRoot: string, req: IncomingMessage, res: ServerResponse, log: string[]): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    SERVER_SOFTWARE: 'svc-test',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ''),
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    REMOTE_USER: 'svc-test',
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
  if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
  if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);

  const child = spawn(GIT_HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  req.pipe(child.stdin);
  child.stdin.on('error', () => undefined);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));

  // CGI output: headers, a blank line, then the body, streamed through.
  let head = Buffer.alloc(0);
  let headersDone = false;
  let status = 200;
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      let sep = head.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (sep === -1) {
        sep = head.indexOf('\n\n');
        sepLen = 2;
      }
      if (sep === -1) return;
      const headerText = head.subarray(0, sep).toString('latin1');
      const rest = head.subarray(sep + sepLen);
      const headers: Record<string, string> = {};
      for (const line of headerText.split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i <= 0) continue;
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 200;
        else headers[name] = value;
      }
      headersDone = true;
      res.writeHead(status, headers);
      if (rest.length) res.write(rest);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (!headersDone) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.write(`git http-backend exited ${code}: ${stderr}`);
        status = 500;
      }
      res.end();
      resolve();
    });
  });
  log.push(`${req.method} ${url.pathname}${url.search} ${status}`);
}
