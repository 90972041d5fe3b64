import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';

// The MCP surface's bounds, set low: the message route's own rate limit, the ingest cap per user,
// open sessions per token, the idle lifetime of a session and the message size. Each answers
// like the REST limits: a problem document, RateLimit fields, Retry-After.

const post = (hub: TestHub, token: string, body: unknown, session?: string) =>
  fetch(`${hub.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session ? { 'mcp-session-id': session } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'limits-test', version: '1' } } };
const call = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

async function open(hub: TestHub, token: string): Promise<string> {
  const r = await post(hub, token, initialize);
  expect(r.status, await r.clone().text()).toBe(200);
  return r.headers.get('mcp-session-id')!;
}

describe.each(DATABASES)('MCP limits (%s)', (kind) => {
  let hub: TestHub;
  let key: string;
  let other: string;

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { mcpMessagesPerMinute: 12, ingestPerMinute: 2 }, mcp: { maxSessionsPerToken: 2, idleSeconds: 2, maxMessageBytes: 2000 } });
    const org = await hub.newOrg('lim');
    key = (await org.user('lee', 'editor', [{ path: 'eng' }])).key;
    other = (await org.user('lou', 'editor', [{ path: 'eng' }])).key;
  }, 60_000);
  afterAll(async () => hub?.close());

  it('bounds open sessions per token, closes idle ones, and DELETE ends one', async () => {
    const a = await open(hub, other);
    const b = await open(hub, other);
    const third = await post(hub, other, initialize);
    expect(third.status).toBe(429);
    expect(((await third.json()) as { detail: string }).detail).toMatch(/this token holds 2 open MCP sessions, the most it may/);
    const ended = await fetch(`${hub.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${other}`, 'mcp-session-id': a } });
    expect(ended.status).toBe(204);
    const reused = await post(hub, other, call(2, 'svc_status', {}), a);
    expect(reused.status).toBe(404);
    await new Promise((r) => setTimeout(r, 2300));
    expect((await post(hub, other, call(3, 'svc_status', {}), b)).status).toBe(404); // idle past 2 s
    await open(hub, other); // the idle ones made room
  });

  it('caps the message size and each user\'s writes through MCP', async () => {
    const s = await open(hub, key);
    const big = await post(hub, key, call(4, 'svc_learn', { statement: 'x'.repeat(3000) }), s);
    expect(big.status).toBe(413);
    const learn = async (i: number) => (await (await post(hub, key, call(10 + i, 'svc_learn', { statement: `Ingest cap statement ${i}` }), s)).json()) as { result: { isError?: boolean; content: Array<{ text: string }> } };
    expect((await learn(1)).result.isError).toBeFalsy();
    expect((await learn(2)).result.isError).toBeFalsy();
    const capped = await learn(3);
    expect(capped.result).toMatchObject({ isError: true, content: [{ text: expect.stringMatching(/^lee has written 2 times this minute through MCP, the most allowed; retry in \d+ s$/) }] });
  });

  it('limits the MCP messages of a token per minute, reporting it in the RateLimit fields', async () => {
    const token = (await (await hub.newOrg('lim2')).user('max', 'editor')).key;
    const s = await open(hub, token);
    let last: Response | undefined;
    for (let i = 0; i < 12; i++) {
      last = await post(hub, token, call(100 + i, 'svc_status', {}), s);
      if (last.status === 429) break;
    }
    expect(last!.status).toBe(429);
    expect(last!.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(last!.headers.get('ratelimit-policy')).toContain('"mcp-messages";q=12;w=60');
    expect(((await last!.json()) as Record<string, unknown>)['violated-policies']).toEqual(['mcp-messages']);
  });
});
