import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
