import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI } from '../../engine/test/support/run-svc.js';
import { readable } from '../observe/logger.js';
import { traceIdOf } from '../observe/request-log.js';
import { startTestHub, type Reply, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { migratedDataFolder } from './support/hub-process.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// The hub's log (issue 29 item 1): one JSON line per request with its id, organization, actor,
// route template, status, latency and size, and one per notable event; a request id from
// X-Request-Id or traceparent, answered and put in every problem document; and, grepped over the
// whole session's log, not one of the secrets, cookies, keys, engram statements or bodies it saw.

type Line = Record<string, unknown> & { event: string; level: string; time: string };

describe('the hub log (pglite)', () => {
  let hub: TestHub;
  let acme: TestOrg;
  let receiver: Receiver;
  let skew = 0;
  let closed = false;
  const raw: string[] = [];
  /** Everything secret or private this session made or sent: none may be in the log. */
  const secrets: string[] = [];
  /** Request id -> the answer's status, for every request sent with an id of ours. */
  const sent = new Map<string, { method: string; status: number }>();
  let n = 0;
  const lines = (): Line[] => raw.map((l) => JSON.parse(l) as Line);
  const access = (id: string) => lines().filter((l) => l.event === 'request' && l.request_id === id);

  /** A REST call with an id of our own, remembered for the per-request check. */
  const call = async (method: string, path: string, o: Parameters<TestHub['request']>[2] = {}): Promise<Reply & { id: string }> => {
    const id = `t-${++n}`;
    const r = await hub.request(method, path, { ...o, headers: { ...o.headers, 'x-request-id': id } });
    expect(r.headers.get('x-request-id')).toBe(id);
    sent.set(id, { method, status: r.status });
    return { ...r, id };
  };

  beforeAll(async () => {
    hub = await startTestHub('pglite', {
      log: (line) => raw.push(line),
      allowPrivateUrls: true,
      webhooks: { pollMs: 50, retryBaseMs: 60_000, maxAttempts: 2 },
      clock: () => Date.now() + skew,
    });
    acme = await hub.newOrg('acme');
    secrets.push(acme.adminKey);
    receiver = await startReceiver();
  }, 60_000);
  afterAll(async () => {
    await receiver?.close();
    if (!closed) await hub?.close();
  });

  it('writes one line per request with its facts, and routes as templates', async () => {
    const statement = 'Quokka-marmalade-7f3e: rotate the flux capacitor every night at 03:00';
    secrets.push(statement, 'Quokka-marmalade-7f3e');
    const erin = await acme.user('erin', 'editor');
    secrets.push(erin.key);
    const learned = await call('POST', '/engrams', { token: erin.key, body: { statement, scope: 'user:erin' } });
    expect(learned.status, learned.text).toBe(201);
    const engramId = learned.body.id as string;
    const read = await call('GET', `/engrams/${engramId}`, { token: erin.key });
    expect(read.status).toBe(200);
    const query = 'lighthouse-zebra-q91 flux capacitor';
    secrets.push('lighthouse-zebra-q91');
    expect((await call('POST', '/recall', { token: erin.key, body: { query } })).status).toBe(200);
    const key = await call('POST', '/me/api-keys', { token: erin.key, body: { name: 'laptop' } });
    expect(key.status, key.text).toBe(201);
    secrets.push(key.body.key);
    expect((await call('GET', '//health', { token: key.body.key })).status).toBe(200);

    for (const [id, { method, status }] of sent) {
      const found = access(id);
      expect(found, `lines of ${id}`).toHaveLength(1);
      const line = found[0]!;
      expect(line).toMatchObject({ level: status >= 500 ? 'error' : 'info', method, status });
      expect(Date.parse(line.time)).toBeGreaterThan(Date.now() - 600_000);
      expect(typeof line.latency_ms).toBe('number');
      expect(line.bytes === null || typeof line.bytes === 'number').toBe(true);
      expect(String(line.route)).not.toContain('ENG-');
    }
    expect(access(learned.id)[0]).toMatchObject({ org: 'acme', actor: erin.id, route: '/api/v1/engrams', status: 201 });
    expect(access(read.id)[0]).toMatchObject({
      org: 'acme',
      actor: erin.id,
      route: '/api/v1/engrams/:id',
      bytes: Buffer.byteLength(read.text),
    });
    expect(raw.join('\n')).not.toContain(engramId.slice(4));
  });

  it('takes a sane X-Request-Id, else a valid traceparent, else makes one; and puts it in problem documents', async () => {
    const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const traced = await hub.request('GET', '/engrams', {
      token: acme.adminKey,
      headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01` },
    });
    expect(traced.headers.get('x-request-id')).toBe(trace);
    expect(access(trace)).toHaveLength(1);
    // Both: the caller's own id wins, the trace is kept beside it.
    const both = await hub.request('GET', '/engrams', {
      token: acme.adminKey,
      headers: { 'x-request-id': 'mine-1', traceparent: `00-${trace}-00f067aa0ba902b7-01` },
    });
    expect(both.headers.get('x-request-id')).toBe('mine-1');
    expect(access('mine-1')[0]).toMatchObject({ trace_id: trace });
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const headers of <Array<Record<string, string>>>[
      {},
      { 'x-request-id': 'has spaces in it' },
      { 'x-request-id': 'x'.repeat(129) },
      { traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` },
      { traceparent: `ff-${trace}-00f067aa0ba902b7-01` },
    ]) {
      const r = await hub.request('GET', '/engrams', { token: acme.adminKey, headers });
      expect(r.headers.get('x-request-id'), JSON.stringify(headers)).toMatch(uuid);
      expect(access(r.headers.get('x-request-id')!)).toHaveLength(1);
    }
    expect(traceIdOf(`01-${trace}-00f067aa0ba902b7-01-later-fields`)).toBe(trace);
    expect(traceIdOf(`00-${trace}-00f067aa0ba902b7-01-more`)).toBeUndefined();

    // Problems: unknown route, no token, a bad body (with a secret in it), a missing engram.
    const bodySecret = 'BODY-SECRET-d41d8cd98f00b204';
    secrets.push(bodySecret);
    const problems = [
      await call('GET', '/nothing-here', { token: acme.adminKey }),
      await call('GET', '/engrams'),
      await call('POST', '/engrams', { token: acme.adminKey, raw: `{"statement": "${bodySecret}", "scope": 12` }),
      await call('POST', '/engrams', { token: acme.adminKey, body: { statement: bodySecret, scope: 'nowhere:at-all' } }),
      await call('GET', '/engrams/ENG-00000000000000000000000000', { token: acme.adminKey }),
    ];
    for (const p of problems) {
      expect(p.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(p.body.request_id, p.text).toBe(p.id);
      expect(access(p.id)).toHaveLength(1);
      expect(access(p.id)[0]!.status).toBe(p.status);
    }
    expect(access(problems[0]!.id)[0]!.route).toBe('/api/v1/*');
    expect(access(problems[1]!.id)[0]).not.toHaveProperty('actor');
  });

  it('logs the sign-in cookie flow, an MCP call and the webhook events without a secret, and start, drain and stop', async () => {
    // A sign-in link, pressed: the session cookie, then a page with it.
    const link = await call('POST', '/admin/login-links', { token: acme.adminKey, body: {} });
    expect(link.status, link.text).toBe(201);
    secrets.push(link.body.path.split('/').pop(), link.body.path.split('.').pop());
    const signed = await fetch(`${hub.url}${link.body.path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        origin: hub.url,
        'sec-fetch-site': 'same-origin',
        'content-type': 'application/x-www-form-urlencoded',
        'x-request-id': 'signin-1',
      },
    });
    expect(signed.status).toBe(303);
    const cookie = signed.headers
      .getSetCookie()
      .find((c) => c.startsWith('svc_session='))!
      .split(';')[0]!;
    secrets.push(cookie.split('=')[1]!);
    const page = await fetch(`${hub.url}/admin/`, { headers: { cookie, 'x-request-id': 'page-1' }, redirect: 'manual' });
    expect(page.status).toBe(200);
    expect(page.headers.get('x-request-id')).toBe('page-1');
    expect(access('page-1')[0]).toMatchObject({ org: 'acme', actor: acme.adminId, method: 'GET', status: 200 });
    expect(access('signin-1')).toHaveLength(1);

    // MCP: a session, a learn and a recall.
    const mcpStatement = 'Narwhal-basalt-5c2e deploys go through the blue door';
    secrets.push(mcpStatement, 'Narwhal-basalt-5c2e');
    const client = new Client({ name: 'hub-logs-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${acme.adminKey}` } },
      }),
    );
    const learned = await client.callTool({ name: 'svc_learn', arguments: { statement: mcpStatement, scope: 'org:acme' } });
    expect(learned.isError).toBeFalsy();
    await client.callTool({ name: 'svc_recall', arguments: { query: 'Narwhal-basalt-5c2e blue door' } });
    await client.close();
    const mcpLines = lines().filter((l) => l.event === 'request' && l.route === '/mcp');
    expect(mcpLines.length).toBeGreaterThanOrEqual(3);
    for (const l of mcpLines) expect(l).toMatchObject({ org: 'acme', actor: acme.adminId });

    // A webhook whose receiver is down: a retry, then disabled; its secret never logged.
    receiver.answer = () => 500;
    const made = await call('POST', '/admin/webhooks', { token: acme.adminKey, body: { url: receiver.url, events: ['engram.created'] } });
    expect(made.status, made.text).toBe(201);
    secrets.push(made.body.secret);
    receiver.secret = made.body.secret;
    await call('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Wombat-cobalt-9a1 waits for the webhook', scope: 'org:acme' },
    });
    secrets.push('Wombat-cobalt-9a1');
    for (let i = 0; i < 2; i++) {
      await receiver.until((all) => all.length === i + 1);
      await hub.running.hub.webhooks.idle();
      skew += 240_000;
    }
    for (let i = 0; i < 200 && !lines().some((l) => l.event === 'webhook.disabled'); i++) await new Promise((d) => setTimeout(d, 25));
    expect(lines().find((l) => l.event === 'webhook.retry')).toMatchObject({
      level: 'info',
      org: 'acme',
      webhook: made.body.id,
      attempt: 1,
      status: 500,
    });
    expect(lines().find((l) => l.event === 'webhook.disabled')).toMatchObject({ level: 'warn', org: 'acme', webhook: made.body.id });

    await hub.close();
    closed = true;
    const events = lines().map((l) => l.event);
    // Start-up warnings (keys kept in the database) may come first; then the start line, before any request.
    expect(events.indexOf('start')).toBeLessThan(events.indexOf('request'));
    expect(lines().find((l) => l.event === 'start')).toMatchObject({ level: 'info', database: 'pglite', url: hub.url });
    expect(events.slice(-2)).toEqual(['drain', 'stopped']);

    // The whole session's log, grepped for every secret and private text it saw.
    const log = raw.join('\n');
    expect(secrets.length).toBeGreaterThan(12);
    for (const s of secrets) expect(log, `the log holds ${s.slice(0, 12)}...`).not.toContain(s);
    expect(log).not.toMatch(/svc_sk_|whsec_|svc_session|Bearer /);
  }, 60_000);

  it('reads as lines of text on a terminal', () => {
    const line = JSON.stringify({
      level: 'info',
      time: '2026-11-27T01:02:03.456Z',
      pid: 1,
      event: 'request',
      request_id: 'r-1',
      org: 'acme',
      method: 'GET',
      route: '/api/v1/engrams/:id',
      status: 200,
      latency_ms: 3.2,
      bytes: 812,
    });
    expect(readable(line, false)).toBe('01:02:03.456 INFO  request GET /api/v1/engrams/:id 200 3.2 ms 812 B request_id=r-1 org=acme');
  });
});

describe('svc hub logs (child process)', () => {
  const run = (env: NodeJS.ProcessEnv, data: string) =>
    spawn(process.execPath, [CLI, 'hub', '--port', '0', '--json', '--data', data], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });

  it('writes JSON lines on stderr (start, migrations, requests, drain) at SVC_HUB_LOG_LEVEL, and refuses a bad level', async () => {
    const data = migratedDataFolder('hub-logs');
    const bad = run({ SVC_HUB_LOG_LEVEL: 'loud' }, data);
    let badErr = '';
    bad.stderr!.on('data', (d) => (badErr += d));
    expect(await new Promise((done) => bad.once('exit', done))).toBe(1);
    expect(badErr).toMatch(/SVC_HUB_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent \(got \\?"loud\\?"\)/);

    const child = run({ SVC_HUB_LOG_LEVEL: 'info' }, data);
    let out = '';
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        out += d;
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve((JSON.parse(line) as { url: string }).url);
      });
      child.once('exit', (code) => reject(new Error(`svc hub exited (${code}): ${err}`)));
    });
    const r = await fetch(`${url}/health`, { headers: { 'x-request-id': 'cli-1' } });
    expect(r.headers.get('x-request-id')).toBe('cli-1');
    await r.text();
    child.kill('SIGTERM');
    expect(await new Promise((done) => child.once('exit', done))).toBe(0);
    // Every line the hub logs is JSON (a setting's warning before the logger exists may be plain text).
    const logged = err
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
    expect(logged.map((l) => l.event)).toEqual(expect.arrayContaining(['migrations', 'start', 'request', 'drain', 'stopped']));
    expect(logged.find((l) => l.event === 'request')).toMatchObject({ request_id: 'cli-1', method: 'GET', route: '/health', status: 200 });
    for (const l of logged) expect(l).toMatchObject({ level: expect.any(String), time: expect.any(String), pid: child.pid });
  }, 60_000);
});
