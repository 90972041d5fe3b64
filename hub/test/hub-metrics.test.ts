import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';

// The hub's Prometheus metrics, scraped over HTTP during a run: only with the metrics token,
// and every family the issue names is there and moves with what the test does (requests by
// route template and status, webhooks, MCP sessions and streams, rate-limit refusals, the
// postings cache, the pool, the audit queue, the process).

const TOKEN = 'metrics-token-0123456789abcdef';

type Labels = Record<string, string>;

/** The value of one series: `name` whose labels include `labels` (summed over the others); undefined when absent. */
function value(text: string, name: string, labels: Labels = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Labels = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) have[k!] = v!;
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

describe.each(DATABASES)('metrics (%s)', (kind) => {
  let hub: TestHub;
  let org: TestOrg;
  const receivers: Receiver[] = [];
  const scrape = async (): Promise<string> => {
    const res = await fetch(`${hub.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  beforeAll(async () => {
    hub = await startTestHub(kind, {
      env: { SVC_HUB_METRICS_TOKEN: TOKEN },
      allowPrivateUrls: true,
      webhooks: { pollMs: 50, maxAttempts: 1 },
      rateLimits: { perMinute: 40 },
    });
    org = await hub.newOrg('metrics');
  }, 60_000);
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  afterAll(async () => hub?.close());

  it('answers only the metrics token: 401 problem without it or with another, in constant-time comparison', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token-wrong-token', `Basic ${TOKEN}`, `Bearer ${TOKEN}x`, org.adminKey]) {
      const res = await fetch(`${hub.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
      const body = (await res.json()) as { status: number; detail: string };
      expect(body.status).toBe(401);
      expect(body.detail).toMatch(/SVC_HUB_METRICS_TOKEN/);
    }
    const text = await scrape();
    expect(text).toContain('# TYPE svc_hub_http_requests_total counter');
  });

  it('counts requests by method, route template and status, with latency histograms; never a raw path', async () => {
    const before = await scrape();
    const made = await hub.request('POST', '/engrams', {
      token: org.adminKey,
      body: { statement: 'Metrics count this write', scope: 'org:metrics' },
    });
    expect(made.status).toBe(201);
    const id = made.body.id as string;
    for (let i = 0; i < 3; i++) expect((await hub.request('GET', `/engrams/${id}`, { token: org.adminKey })).status).toBe(200);
    expect((await hub.request('GET', '/engrams/ENG-NOPE-2020-0101-001', { token: org.adminKey })).status).toBe(404);
    expect((await hub.request('GET', `/engrams/${id}`)).status).toBe(401);
    const after = await scrape();

    const moved = (labels: Labels, name = 'svc_hub_http_requests_total') =>
      (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
    expect(moved({ method: 'POST', route: '/api/v1/engrams', status: '201' })).toBe(1);
    expect(moved({ method: 'GET', route: '/api/v1/engrams/:id', status: '200' })).toBe(3);
    expect(moved({ method: 'GET', route: '/api/v1/engrams/:id', status: '404' })).toBe(1);
    // Refused at the gate, before a route matched: labelled by its surface.
    expect(moved({ method: 'GET', route: '/api/v1/*', status: '401' })).toBe(1);
    expect(moved({ method: 'GET', route: '/api/v1/engrams/:id' }, 'svc_hub_http_request_duration_seconds_count')).toBe(4);
    expect(
      value(after, 'svc_hub_http_request_duration_seconds_bucket', { method: 'GET', route: '/api/v1/engrams/:id', le: '+Inf' }),
    ).toBeGreaterThanOrEqual(4);
    // The scrapes themselves are requests too.
    expect(value(after, 'svc_hub_http_requests_total', { route: '/metrics', status: '200' })).toBeGreaterThanOrEqual(1);
    // No label holds an id.
    expect(after).not.toContain(id);
    expect(after).not.toContain('ENG-NOPE');
  });

  it('shows the pool, the audit queue, the process and the event loop', async () => {
    const text = await scrape();
    expect(value(text, 'svc_hub_db_pool_size')).toBe(kind === 'pglite' ? 1 : 10);
    expect(value(text, 'svc_hub_db_pool_in_use')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'svc_hub_db_pool_waiting')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'svc_hub_audit_queue_rows')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'svc_hub_audit_queue_capacity_rows')).toBe(10_000);
    expect(value(text, 'svc_hub_audit_lost_rows_total')).toBe(0);
    expect(value(text, 'svc_hub_audit_writer_up')).toBe(1);
    expect(value(text, 'process_resident_memory_bytes')).toBeGreaterThan(1_000_000);
    expect(value(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(value(text, 'svc_hub_metrics_database_up')).toBe(1);
  });

  it('moves the webhook series: deliveries and their lag, the backlog, disables', async () => {
    const before = await scrape();
    const ok = await startReceiver();
    const down = await startReceiver();
    receivers.push(ok, down);
    down.answer = () => 503;
    for (const r of [ok, down]) {
      const made = await hub.request('POST', '/admin/webhooks', { token: org.adminKey, body: { url: r.url, events: ['engram.created'] } });
      expect(made.status).toBe(201);
      r.secret = made.body.secret;
    }
    await hub.request('POST', '/engrams', { token: org.adminKey, body: { statement: 'A webhook carries this', scope: 'org:metrics' } });
    await ok.until((all) => all.length === 1);
    await down.until((all) => all.length === 1);
    await hub.running.hub.webhooks.idle();
    const after = await scrape();
    const moved = (name: string, labels: Labels = {}) => (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);
    expect(moved('svc_hub_webhook_deliveries_total', { outcome: 'delivered' })).toBe(1);
    expect(moved('svc_hub_webhook_deliveries_total', { outcome: 'failed' })).toBe(1);
    expect(moved('svc_hub_webhook_delivery_lag_seconds_count')).toBe(1);
    // One attempt allowed, nothing ever delivered: the receiver is down and its webhook disabled.
    expect(moved('svc_hub_webhook_disables_total')).toBe(1);
    expect(value(after, 'svc_hub_webhooks_disabled')).toBe(1);
    expect(value(after, 'svc_hub_webhook_backlog')).toBe(0);
    expect(value(after, 'svc_hub_webhook_sends_in_flight')).toBe(0);
  });

  it('shows MCP sessions and SSE streams open, and their end', async () => {
    const headers = { Authorization: `Bearer ${org.adminKey}` };
    const base = await scrape();
    const http = new Client({ name: 'metrics-http', version: '1' });
    await http.connect(new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), { requestInit: { headers } }));
    const sse = new Client({ name: 'metrics-sse', version: '1' });
    await sse.connect(
      new SSEClientTransport(new URL(`${hub.url}/sse`), {
        requestInit: { headers },
        eventSourceInit: {
          fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
        },
      }),
    );
    const open = await scrape();
    expect(value(open, 'svc_hub_mcp_sessions_open')! - value(base, 'svc_hub_mcp_sessions_open')!).toBe(2);
    expect(value(open, 'svc_hub_mcp_sse_streams_open')! - value(base, 'svc_hub_mcp_sse_streams_open')!).toBe(1);
    expect(value(open, 'svc_hub_http_requests_total', { method: 'POST', route: '/mcp', status: '200' })).toBeGreaterThanOrEqual(1);
    await http.close();
    await sse.close();
    // The SSE stream ends with its connection; its session with the relay's next look.
    await expect
      .poll(async () => value(await scrape(), 'svc_hub_mcp_sse_streams_open'), { timeout: 10_000 })
      .toBe(value(base, 'svc_hub_mcp_sse_streams_open'));
  });

  it('counts rate-limit refusals by policy', async () => {
    const before = await scrape();
    const busy = await org.user('busy', 'editor');
    let refused = 0;
    for (let i = 0; i < 60 && refused < 2; i++)
      if ((await hub.request('GET', '/engrams?limit=1', { token: busy.key })).status === 429) refused++;
    expect(refused).toBe(2);
    const after = await scrape();
    const moved = (labels: Labels) =>
      (value(after, 'svc_hub_rate_limit_refusals_total', labels) ?? 0) - (value(before, 'svc_hub_rate_limit_refusals_total', labels) ?? 0);
    expect(moved({ policy: 'requests' })).toBe(2);
    expect(
      (value(after, 'svc_hub_http_requests_total', { status: '429' }) ?? 0) -
        (value(before, 'svc_hub_http_requests_total', { status: '429' }) ?? 0),
    ).toBe(2);
  });

  it('shows the postings cache: what it holds and its hits', async () => {
    const before = await scrape();
    const searcher = await org.user('searcher', 'editor');
    for (let i = 0; i < 3; i++) {
      const r = await hub.request('POST', '/recall', { token: searcher.key, body: { query: 'metrics write webhook' } });
      expect(r.status).toBe(200);
    }
    const after = await scrape();
    const lookups = (text: string) =>
      ['hit', 'miss', 'bypass'].reduce((n, result) => n + (value(text, 'svc_hub_postings_cache_lookups_total', { result }) ?? 0), 0);
    expect(lookups(after) - lookups(before)).toBeGreaterThanOrEqual(3);
    expect(
      (value(after, 'svc_hub_postings_cache_lookups_total', { result: 'hit' }) ?? 0) -
        (value(before, 'svc_hub_postings_cache_lookups_total', { result: 'hit' }) ?? 0),
    ).toBeGreaterThanOrEqual(2);
    expect(value(after, 'svc_hub_postings_cache_engrams')).toBeGreaterThanOrEqual(2);
    expect(value(after, 'svc_hub_postings_cache_capacity_engrams')).toBeGreaterThan(0);
  });
});
