import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';
import { issueApiKey } from '../access/identity.js';

// The MCP surface's bounds, set low: the message route's own rate limit, the ingest cap per user,
// open sessions per token, the idle lifetime of a session and the message size. Each answers
// like the REST limits: a problem document, RateLimit fields, Retry-After.

const post = (hub: TestHub, token: string, body: unknown, session?: string) =>
  fetch(`${hub.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session ? { 'mcp-session-id': session } : {}),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'limits-test', version: '1' } },
};
const call = (id: number, name: string, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});

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
    hub = await startTestHub(kind, {
      rateLimits: { mcpMessagesPerMinute: 12, ingestPerMinute: 2 },
      mcp: { maxSessionsPerToken: 2, maxSessionsPerUser: 3, idleSeconds: 2, maxMessageBytes: 2000 },
    });
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

  it("caps the message size and each user's writes through MCP", async () => {
    const s = await open(hub, key);
    const big = await post(hub, key, call(4, 'svc_learn', { statement: 'x'.repeat(3000) }), s);
    expect(big.status).toBe(413);
    const learn = async (i: number) =>
      (await (await post(hub, key, call(10 + i, 'svc_learn', { statement: `Ingest cap statement ${i}` }), s)).json()) as {
        result: { isError?: boolean; content: Array<{ text: string }> };
      };
    expect((await learn(1)).result.isError).toBeFalsy();
    expect((await learn(2)).result.isError).toBeFalsy();
    const capped = await learn(3);
    expect(capped.result).toMatchObject({
      isError: true,
      content: [{ text: expect.stringMatching(/^lee has written 2 times this minute through MCP, the most allowed; retry in \d+ s$/) }],
    });
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

  // Issue 25, item 12: a batch was one message to the limit, however many calls it held.
  it('counts every message of a JSON-RPC batch against the message limit, and caps a batch', async () => {
    const token = (await (await hub.newOrg('lim3')).user('bea', 'editor')).key;
    const s = await open(hub, token);
    const batch = await post(
      hub,
      token,
      Array.from({ length: 12 }, (_, i) => call(200 + i, 'svc_status', {})),
      s,
    );
    expect(batch.status).toBe(429);
    expect(((await batch.json()) as Record<string, unknown>)['violated-policies']).toEqual(['mcp-messages']);
    const token2 = (await (await hub.newOrg('lim4')).user('bo', 'editor')).key;
    const s2 = await open(hub, token2);
    const huge = await post(
      hub,
      token2,
      Array.from({ length: 21 }, (_, i) => ({ jsonrpc: '2.0', method: 'notifications/x', params: { i } })),
      s2,
    );
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { detail: string }).detail).toBe(
      'a JSON-RPC batch holds at most 20 messages (got 21); send the rest in further requests',
    );
  });

  // Issue 25, item 19: a session is the opening token's, not any token of its user.
  it('refuses a session to another token of the same user, as to another user', async () => {
    const org = await hub.newOrg('bind');
    const first = await org.user('tess', 'editor');
    const second = (await issueApiKey(hub.db, org.org, first.id, 'tess second key')).key;
    const s = await open(hub, first.key);
    expect((await post(hub, first.key, call(300, 'svc_status', {}), s)).status).toBe(200);
    const stranger = await post(hub, second, call(301, 'svc_status', {}), s);
    expect(stranger.status).toBe(404);
    const ended = await fetch(`${hub.url}/mcp`, { method: 'DELETE', headers: { authorization: `Bearer ${second}`, 'mcp-session-id': s } });
    expect(ended.status).toBe(404);
    expect((await post(hub, first.key, call(302, 'svc_status', {}), s)).status).toBe(200);
  });

  // Issue 25, item 12: twenty self-issued keys held twenty times the sessions (and SSE streams).
  it('bounds open sessions per person over all their tokens', async () => {
    const org = await hub.newOrg('many');
    const u = await org.user('kim', 'viewer');
    const keys = [u.key, (await issueApiKey(hub.db, org.org, u.id, 'k2')).key];
    await open(hub, keys[0]!);
    await open(hub, keys[0]!);
    await open(hub, keys[1]!);
    const fourth = await post(hub, keys[1]!, initialize);
    expect(fourth.status).toBe(429);
    expect(((await fourth.json()) as { detail: string }).detail).toMatch(
      /^kim holds 3 open MCP sessions over all their tokens, the most one person may/,
    );
  });

  // Issue 25, item 12: SSE streams outlived their sessions (64 open on one key after idle timeouts).
  it('ends an SSE stream when its session goes idle, and when its session is ended', async () => {
    const org = await hub.newOrg('streams');
    const u = await org.user('sam', 'viewer');
    const openStream = async () => {
      const res = await fetch(`${hub.url}/sse`, { headers: { authorization: `Bearer ${u.key}`, accept: 'text/event-stream' } });
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let text = '';
      while (!/sessionId=([\w-]+)/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      const id = /sessionId=([\w-]+)/.exec(text)![1]!;
      /** Resolves when the hub ends the stream. */
      const ended = (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })();
      return { id, ended };
    };
    const idle = await openStream();
    expect(await idle.ended).toBe(true); // idle 2 s: the hub closes it
    const busy = await openStream();
    const del = await fetch(`${hub.url}/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${u.key}`, 'mcp-session-id': busy.id },
    });
    expect(del.status).toBe(204);
    expect(await busy.ended).toBe(true);
    const open = await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${org.org.schema}.mcp_sessions WHERE closed_at IS NULL`);
    expect(open.rows[0]!.n).toBe(0);
  }, 30_000);
});
