import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { toolsForProfile } from '../../engine/mcp/tools.js';
import { callTool, type Called } from '../../engine/test/support/mcp-call.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// The hub's MCP surface through the SDK's own client, over streamable HTTP and over HTTP+SSE:
// the same tools as `svc mcp`, on the organization's data, behind the token, the session and the
// pipeline (allowed tools, sanitized arguments and answers, write checks, audit).

type Kind = 'http' | 'sse';

interface Connected {
  client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<Called>;
  close(): Promise<void>;
}

async function connect(hub: TestHub, token: string, kind: Kind, profile?: 'lean'): Promise<Connected> {
  const headers = { Authorization: `Bearer ${token}` };
  const query = profile ? `?profile=${profile}` : '';
  const transport =
    kind === 'http'
      ? new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp${query}`), { requestInit: { headers } })
      : new SSEClientTransport(new URL(`${hub.url}/sse${query}`), {
          requestInit: { headers },
          eventSourceInit: {
            fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
          },
        });
  const client = new Client({ name: 'hub-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    call: (name, args = {}) => callTool(client, name, args),
    close: () => client.close(),
  };
}

describe.each(DATABASES)('MCP over HTTP (%s)', (db) => {
  let hub: TestHub;
  let acme: TestOrg;
  let other: TestOrg;
  let erin: { id: string; key: string };
  let vic: { id: string; key: string };

  beforeAll(async () => {
    hub = await startTestHub(db);
    acme = await hub.newOrg('acme');
    other = await hub.newOrg('globex');
    erin = await acme.user('erin', 'editor', [{ path: 'eng' }]);
    vic = await acme.user('vic', 'viewer', [{ path: 'eng' }]);
  }, 60_000);
  afterAll(async () => hub?.close());

  describe.each<Kind>(['http', 'sse'])('over %s', (kind) => {
    it('lists the 39 tools of svc mcp (11 with the lean profile), with the same schemas', async () => {
      const c = await connect(hub, erin.key, kind);
      const { tools } = await c.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(
        toolsForProfile('full')
          .map((t) => t.name)
          .sort(),
      );
      expect(tools.find((t) => t.name === 'svc_learn')!.inputSchema).toMatchObject({ type: 'object', required: ['statement'] });
      await c.close();
      const lean = await connect(hub, erin.key, kind, 'lean');
      expect((await lean.client.listTools()).tools).toHaveLength(toolsForProfile('lean').length);
      await lean.close();
    });

    it('learns, recalls, injects, starts and ends a session and gives feedback on hub data', async () => {
      const c = await connect(hub, erin.key, kind);
      const learned = await c.call('svc_learn', { statement: `Deploy with the ${kind} blue green script`, scope: 'group:eng' });
      expect(learned.isError, learned.text).toBe(false);
      expect(learned.data).toMatchObject({ action: 'created', scope: 'group:eng' });
      const id = learned.data.id as string;
      // The REST API sees it: one store.
      expect((await hub.request('GET', `/engrams/${id}`, { token: erin.key })).status).toBe(200);
      const recalled = await c.call('svc_recall', { query: `${kind} blue green` });
      expect(recalled.data.results.map((r: { id: string }) => r.id)).toContain(id);
      expect(recalled.data.legs).toMatchObject({ bm25: 'ran' });
      const injected = await c.call('svc_inject', { task: `deploy with ${kind} blue green` });
      expect(injected.data.text).toContain('blue green');
      const started = await c.call('svc_session_start', { task: 'deploy' });
      expect(started.isError, started.text).toBe(false);
      const sessionId = started.data.session.id as string;
      expect((await c.call('svc_feedback', { id, signal: 'positive', session: sessionId })).isError).toBe(false);
      const ended = await c.call('svc_session_end', { session: sessionId, summary: 'deployed' });
      expect(ended.data.session).toMatchObject({ id: sessionId, status: 'ended' });
      // Status answers without the fields of a developer's machine.
      const status = await c.call('svc_status');
      expect(status.isError, status.text).toBe(false);
      expect(status.text).not.toMatch(/storage_root|id_prefix|quarantined/);
      await c.close();
    });

    it('another organization sees nothing; a viewer writes nothing; scopes not writable are refused', async () => {
      const mine = await connect(hub, erin.key, kind);
      await mine.call('svc_learn', { statement: `Acme only: rotate the ${kind} keys monthly`, scope: 'group:eng' });
      const theirs = await connect(hub, other.adminKey, kind);
      const r = await theirs.call('svc_recall', { query: `rotate ${kind} keys monthly` });
      expect(r.data.results).toEqual([]);
      const viewer = await connect(hub, vic.key, kind);
      const refused = await viewer.call('svc_learn', { statement: 'Viewers cannot write this', scope: 'group:eng' });
      expect(refused).toMatchObject({ isError: true, text: 'vic is a viewer: viewers change nothing (svc_learn writes)' });
      expect((await viewer.call('svc_recall', { query: `rotate ${kind} keys` })).data.results.length).toBeGreaterThan(0);
      const scope = await mine.call('svc_learn', { statement: 'Into the sales scope', scope: 'group:sales' });
      expect(scope).toMatchObject({ isError: true, text: expect.stringMatching(/^erin may not write scope "group:sales"/) });
      for (const c of [mine, theirs, viewer]) await c.close();
    });

    it('answers bad arguments and local-only tools with the same one-line errors as stdio', async () => {
      const c = await connect(hub, erin.key, kind);
      const bad = await c.call('svc_learn', { statement: 42 });
      expect(bad.isError).toBe(true);
      expect(bad.text).toMatch(/^invalid arguments for svc_learn: statement/);
      expect(bad.text).not.toContain('\n');
      const unknown = await c.call('svc_teleport');
      expect(unknown.text).toMatch(/^unknown tool "svc_teleport"/);
      // Client-only fields are dropped before the strict schema sees them: the hub calls no LLM a client names.
      const stripped = await c.call('svc_learn', {
        statement: `Strip the ${kind} LLM fields`,
        scope: 'group:eng',
        llm_api_key: 'sk-x',
        llm_base_url: 'http://169.254.169.254',
      });
      expect(stripped.isError, stripped.text).toBe(false);
      expect((await c.call('svc_learn', { statement: 'x', colour: 'red' })).text).toMatch(/^invalid arguments for svc_learn: .*colour/);
      const local = await c.call('svc_sync');
      expect(local).toMatchObject({
        isError: true,
        text: expect.stringMatching(
          /^svc_sync works on a developer's machine \(it syncs a local store through git\): run it with svc mcp there, not on the hub$/,
        ),
      });
      await c.close();
    });
  });

  it("refuses a missing or bad token with 401 and WWW-Authenticate, and another user's session with 404", async () => {
    for (const path of ['/mcp', '/sse', '/messages?sessionId=x']) {
      const r = await fetch(`${hub.url}${path}`, {
        method: path === '/sse' ? 'GET' : 'POST',
        headers: { 'content-type': 'application/json' },
        body: path === '/sse' ? undefined : '{}',
      });
      expect(r.status, path).toBe(401);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer realm="svc"/);
    }
    const c = await connect(hub, erin.key, 'http');
    const sessionId = (c.client.transport as StreamableHTTPClientTransport).sessionId!;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const stolen = await fetch(`${hub.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${vic.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(stolen.status).toBe(404);
    await c.close();
  });

  it("applies the organization's allow and deny lists, set by an admin", async () => {
    const put = await hub.request('PUT', '/admin/mcp/tools', {
      token: acme.adminKey,
      body: { allow: null, deny: ['svc_forget'] },
      template: '/admin/mcp/tools',
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ allow: null, deny: ['svc_forget'], local_only: expect.arrayContaining(['svc_sync']) });
    const c = await connect(hub, erin.key, 'http');
    const refused = await c.call('svc_forget', { target: 'anything' });
    expect(refused).toMatchObject({
      isError: true,
      text: 'svc_forget is not allowed in this organization (an admin sets which tools: PUT /api/v1/admin/mcp/tools)',
    });
    expect((await hub.request('PUT', '/admin/mcp/tools', { token: erin.key, body: { deny: [] } })).status).toBe(403);
    expect((await hub.request('PUT', '/admin/mcp/tools', { token: acme.adminKey, body: { deny: ['svc_nothing'] } })).status).toBe(400);
    await hub.request('PUT', '/admin/mcp/tools', { token: acme.adminKey, body: { deny: [] } });
    expect((await c.call('svc_forget', { target: 'anything' })).text).not.toMatch(/not allowed/);
    await c.close();
  });

  it("writes an audit row for every tool call, in the write's own transaction", async () => {
    const c = await connect(hub, erin.key, 'http');
    const learned = await c.call('svc_learn', { statement: 'Audit every MCP write', scope: 'group:eng' });
    await c.call('svc_recall', { query: 'audit' });
    await c.close();
    await new Promise((r) => setTimeout(r, 300)); // reads are queued
    const audit = await hub.request('GET', '/admin/audit?action=MCP%20svc_learn', { token: acme.adminKey });
    expect(audit.body.items).toContainEqual(
      expect.objectContaining({ actor: 'erin', action: 'MCP svc_learn', resource: `engram:${learned.data.id}`, outcome: 200 }),
    );
    const reads = await hub.request('GET', '/admin/audit?action=MCP%20svc_recall', { token: acme.adminKey });
    expect(reads.body.items.length).toBeGreaterThan(0);
  });

  it('answers a lone tools/call directly exactly as the SDK answers it inside a batch, and leaves malformed ones to the SDK', async () => {
    const headers = {
      authorization: `Bearer ${erin.key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    };
    const post = async (body: unknown, extra: Record<string, string> = {}) => {
      const res = await fetch(`${hub.url}/mcp`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
      return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as unknown };
    };
    const init = await fetch(`${hub.url}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    await init.text();
    const session = { 'mcp-session-id': init.headers.get('mcp-session-id')! };
    const ping = { jsonrpc: '2.0', id: 'p', method: 'ping' };
    const calls = [
      { name: 'svc_recall', arguments: { query: 'blue green deploy', fast: true } },
      { name: 'svc_recall', arguments: { query: 7 } }, // bad arguments: a tool error
      { name: 'svc_nothing', arguments: {} }, // unknown tool
      { name: 'svc_status' },
    ];
    for (const [i, params] of calls.entries()) {
      const message = { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params };
      const direct = await post(message, session);
      const viaSdk = await post([message, ping], session);
      expect(direct.status).toBe(200);
      expect(direct.type).toMatch(/^application\/json/);
      expect(viaSdk.body).toEqual([direct.body, { jsonrpc: '2.0', id: 'p', result: {} }]);
    }
    // Malformed: the SDK's own answers.
    const noName = await post({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { arguments: {} } }, session);
    expect(noName.body).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: expect.any(Number), message: expect.any(String) } });
    const noSse = await post(
      { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'svc_status' } },
      { ...session, accept: 'application/json' },
    );
    expect(noSse.status).toBe(406);
    const oldVersion = await post(
      { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'svc_status' } },
      { ...session, 'mcp-protocol-version': '1999-01-01' },
    );
    expect(oldVersion.status).toBe(400);
  });
});
