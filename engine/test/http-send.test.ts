import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpSend } from '../remote/http-send.js';
import { HubClient, RemoteFailure } from '../remote/hub-client.js';

// The hub client's one HTTP exchange, against real loopback servers.

let server: Server;
let base: string;
const seen: Array<{ method?: string; body: string; auth?: string }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method, body, auth: req.headers.authorization });
      if (req.url === '/never') return; // keeps the request open
      if (req.url?.startsWith('/moved')) {
        res.writeHead(301, { location: 'https://hub.example/' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: body }));
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe('httpSend', () => {
  it('sends the method, headers and body, and returns the status and text', async () => {
    const r = await httpSend(`${base}/x`, { method: 'POST', headers: { authorization: 'Bearer t' }, body: '{"a":"é"}', timeoutMs: 2000 });
    expect(r).toEqual({ status: 200, text: JSON.stringify({ echo: '{"a":"é"}' }) });
    expect(seen.at(-1)).toEqual({ method: 'POST', body: '{"a":"é"}', auth: 'Bearer t' });
  });

  it('gives up at the deadline with a reason, and does not follow redirects', async () => {
    await expect(httpSend(`${base}/never`, { timeoutMs: 200 })).rejects.toMatchObject({
      reason: 'timeout',
      message: 'no answer within 0.2 s',
    });
    expect(await httpSend(`${base}/moved`, { timeoutMs: 2000 })).toMatchObject({ status: 301, location: 'https://hub.example/' });
  });

  it('names network and TLS failures in one line', async () => {
    const port = (server.address() as AddressInfo).port;
    await expect(httpSend(`https://127.0.0.1:${port}/x`, { timeoutMs: 2000 })).rejects.toMatchObject({
      reason: 'network',
      message: expect.stringMatching(/^TLS failed: [^\n]+$/),
    });
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const gone = (closed.address() as AddressInfo).port;
    closed.close();
    await expect(httpSend(`http://127.0.0.1:${gone}/`, { timeoutMs: 2000 })).rejects.toMatchObject({
      message: `connect ECONNREFUSED 127.0.0.1:${gone}`,
    });
  });
});

describe('httpSend over https with SVC_EXTRA_CA_CERTS', () => {
  // A certificate authority of its own (openssl), whose certificate is in no trust store, signs
  // the loopback server's certificate: the hook shim's case, a company CA moved from NODE_EXTRA_CA_CERTS.
  const dir = mkdtempSync(join(tmpdir(), 'svc-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  let url: string;
  let tls: ReturnType<typeof createTlsServer>;
  const saved = { svc: process.env.SVC_EXTRA_CA_CERTS, node: process.env.NODE_EXTRA_CA_CERTS };

  beforeAll(async () => {
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=svc test CA');
    openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(file('san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    openssl(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.pem',
      '-days',
      '2',
      '-extfile',
      'san.cnf',
    );
    tls = createTlsServer({ key: readFileSync(file('server.key')), cert: readFileSync(file('server.pem')) }, (_req, res) => {
      res.writeHead(200).end('over tls');
    });
    await new Promise<void>((done) => tls.listen(0, '127.0.0.1', done));
    url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}/x`;
  });

  afterAll(() => {
    tls?.closeAllConnections();
    tls?.close();
    for (const [name, value] of [
      ['SVC_EXTRA_CA_CERTS', saved.svc],
      ['NODE_EXTRA_CA_CERTS', saved.node],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  });

  it("trusts the certificates the file names, besides Node's own; without it the certificate is refused", async () => {
    delete process.env.NODE_EXTRA_CA_CERTS;
    delete process.env.SVC_EXTRA_CA_CERTS;
    await expect(httpSend(url, { timeoutMs: 5000 })).rejects.toMatchObject({
      reason: 'network',
      message: expect.stringMatching(/certificate/),
    });
    process.env.SVC_EXTRA_CA_CERTS = file('ca.pem');
    expect(await httpSend(url, { timeoutMs: 5000 })).toEqual({ status: 200, text: 'over tls' });
    process.env.SVC_EXTRA_CA_CERTS = file('missing.pem');
    await expect(httpSend(url, { timeoutMs: 5000 })).rejects.toMatchObject({
      reason: 'network',
      message: `SVC_EXTRA_CA_CERTS names ${file('missing.pem')}, which cannot be read (ENOENT)`,
    });
  });
});

describe('HubClient', () => {
  it('refuses a hub address that redirects, naming where it points', async () => {
    const client = new HubClient({ url: `${base}/moved`, token: 't' });
    const err = await client.me(2000).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RemoteFailure);
    expect(err).toMatchObject({ kind: 'refused', status: 301 });
    expect((err as Error).message).toBe(
      `the hub at ${base}/moved answered 301: HTTP 301, a redirect to https://hub.example/: set remote_url to the address it names`,
    );
  });
});
