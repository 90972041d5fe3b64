import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHub, type TestHub } from './support/hub-fixture.js';

// MCP tool arguments are held to the REST caps (issue 25, item 12: MCP took a 1 MiB query where
// REST takes 2,000 characters, and a 60,000-term recall held the event loop). The caps are the
// engine's tool schemas (engine/mcp/fields.ts), so `svc mcp` on stdio has the same ones.

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'caps-test', version: '1' } },
};

describe('MCP argument caps', () => {
  let hub: TestHub;
  let key: string;
  let session: string;
  let id = 10;
  beforeAll(async () => {
    hub = await startTestHub('pglite');
    key = (await hub.newOrg('caps')).adminKey;
    const r = await rpc(initialize);
    session = r.headers.get('mcp-session-id')!;
  }, 60_000);
  afterAll(async () => hub?.close());

  function rpc(body: unknown): Promise<Response> {
    return fetch(`${hub.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(session ? { 'mcp-session-id': session } : {}),
      },
      body: JSON.stringify(body),
    });
  }
  async function call(name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; text: string }> {
    const r = await rpc({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name, arguments: args } });
    expect(r.status).toBe(200);
    const body = (await r.json()) as { result?: { isError?: boolean; content: Array<{ text: string }> }; error?: { message: string } };
    if (body.error) return { isError: true, text: body.error.message };
    return { isError: body.result!.isError, text: body.result!.content.map((c) => c.text).join('\n') };
  }

  it('refuses a recall query longer than REST takes, and takes one at the cap', async () => {
    const long = await call('svc_recall', { query: 'term '.repeat(401).trim() + 'x', fast: true });
    expect(long.isError).toBe(true);
    expect(long.text).toMatch(/query: must be at most 2000 characters/);
    const atCap = await call('svc_recall', { query: 'a'.repeat(2000), fast: true });
    expect(atCap.isError).toBeFalsy();
  });

  it('holds inject tasks, tags, timeline queries and session tasks to the REST caps', async () => {
    expect((await call('svc_inject', { task: 'x'.repeat(4001) })).text).toMatch(/task: must be at most 4000 characters/);
    expect((await call('svc_learn', { statement: 'Capped tags', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) })).text).toMatch(
      /tags: must hold at most 50 tags/,
    );
    expect((await call('svc_learn', { statement: 'Capped tag', tags: ['y'.repeat(101)] })).text).toMatch(/must be at most 100 characters/);
    expect((await call('svc_timeline', { query: 'z'.repeat(2001) })).text).toMatch(/query: must be at most 2000 characters/);
    expect((await call('svc_session_start', { task: 'w'.repeat(4001) })).text).toMatch(/task: must be at most 4000 characters/);
  });
});
