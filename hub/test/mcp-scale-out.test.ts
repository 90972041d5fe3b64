import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub } from './support/hub-fixture.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';
import { startPrivatePostgres, type PrivatePostgres } from './support/private-postgres.js';
import { svcJson } from '../../engine/test/support/run-svc.js';

// Two hub processes on one PostgreSQL, as behind a load balancer: an SSE session's messages that
// reach the process not holding its stream still get their answers down that stream, and a
// streamable HTTP session works whichever process each request reaches.

/** An MCP client over SSE to the hub at `base`, its message POSTs sent through `send`. */
async function sseClient(base: string, key: string, send: typeof fetch): Promise<Client> {
  const headers = { Authorization: `Bearer ${key}` };
  const transport = new SSEClientTransport(new URL(`${base}/sse`), {
    requestInit: { headers },
    eventSourceInit: {
      fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
    },
    fetch: send,
  });
  const client = new Client({ name: 'twin-sse', version: '1' });
  await client.connect(transport);
  return client;
}

describe.runIf(DATABASES.includes('postgres'))('MCP over HTTP across two hub processes', () => {
  let hub: TestHub;
  let child: HubProcess;
  let key: string;

  beforeAll(async () => {
    hub = await startTestHub('postgres');
    child = await startHubProcess({ DATABASE_URL: hub.database.url! });
    key = (await (await hub.newOrg('twin')).user('tia', 'editor', [{ path: 'eng' }])).key;
  }, 60_000);
  afterAll(async () => {
    await child?.stop();
    await hub?.close();
  });

  /** A fetch that sends requests matching `which` to the other process. */
  const divert = (which: (url: URL, init?: RequestInit) => boolean): typeof fetch => {
    return (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (which(url, init)) {
        const target = new URL(child.url);
        url.protocol = target.protocol;
        url.host = target.host;
      }
      return fetch(url, init);
    };
  };

  it('answers SSE messages posted to the process that does not hold the stream', async () => {
    const client = await sseClient(
      hub.url,
      key,
      divert((url) => url.pathname === '/messages'),
    );
    const learned = (await client.callTool({
      name: 'svc_learn',
      arguments: { statement: 'Relay answers through PostgreSQL', scope: 'group:eng' },
    })) as { isError?: boolean; content: Array<{ text: string }> };
    expect(learned.isError, learned.content[0]!.text).toBeFalsy();
    const found = (await client.callTool({ name: 'svc_recall', arguments: { query: 'relay answers postgresql' } })) as {
      content: Array<{ text: string }>;
    };
    expect(JSON.parse(found.content[0]!.text).results[0].statement).toBe('Relay answers through PostgreSQL');
    expect((await client.listTools()).tools).toHaveLength(39);
    await client.close();
  });

  it('keeps relaying SSE answers after the database dropped every connection, as a restart does', async () => {
    const client = await sseClient(
      hub.url,
      key,
      divert((url) => url.pathname === '/messages'),
    );
    // Every session of the hub's database ends, the LISTEN connections of both processes included.
    const ended = await hub.db.query<{ n: number }>(
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    expect(ended.rows[0]!.n).toBeGreaterThan(0);
    // The pools drop the connections that ended as they notice them (a request that reaches one
    // first fails, as on any database restart); the LISTEN connections come back within a second.
    await new Promise((done) => setTimeout(done, 1_500));
    // Posted to the process that does not hold the stream: the answer comes through the relay.
    for (let i = 0; i < 3; i++) {
      const r = (await client.callTool({
        name: 'svc_learn',
        arguments: { statement: `Answer after the database came back ${i}`, scope: 'group:eng' },
      })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(r.isError, r.content[0]!.text).toBeFalsy();
    }
    expect((await client.listTools()).tools).toHaveLength(39);
    await client.close();
  }, 60_000);

  it('serves a streamable HTTP session whichever process each request reaches', async () => {
    let n = 0;
    const transport = new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
      fetch: divert(() => n++ % 2 === 1),
    });
    const client = new Client({ name: 'twin-http', version: '1' });
    await client.connect(transport);
    for (let i = 0; i < 4; i++) {
      const r = (await client.callTool({
        name: 'svc_learn',
        arguments: { statement: `Alternating process statement ${i}`, scope: 'group:eng' },
      })) as { isError?: boolean; content: Array<{ text: string }> };
      expect(r.isError, r.content[0]!.text).toBeFalsy();
    }
    const found = (await client.callTool({ name: 'svc_recall', arguments: { query: 'alternating process statement', limit: 10 } })) as {
      content: Array<{ text: string }>;
    };
    expect(JSON.parse(found.content[0]!.text).results).toHaveLength(4);
    expect(n).toBeGreaterThan(4);
    await client.close();
  });
});

describe.runIf(DATABASES.includes('postgres'))('MCP over SSE across two hub processes, through a PostgreSQL restart', () => {
  let pg: PrivatePostgres;
  let a: HubProcess;
  let b: HubProcess;
  let key: string;

  beforeAll(async () => {
    pg = await startPrivatePostgres();
    const made = await svcJson(['hub', 'org', 'create', 'twin', '--admin', 'tia', '--json'], { env: { DATABASE_URL: pg.url } });
    expect(made.run.code, made.run.stderr).toBe(0);
    key = made.data.api_key;
    a = await startHubProcess({ DATABASE_URL: pg.url });
    b = await startHubProcess({ DATABASE_URL: pg.url });
  }, 120_000);
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    pg?.stop();
  });

  it('answers messages posted to the process that does not hold the stream, after the database restarted under both', async () => {
    const toB = (input: string | URL | Request, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname === '/messages') url.host = new URL(b.url).host;
      return fetch(url, init);
    };
    const client = await sseClient(a.url, key, toB);
    pg.restart();
    // Until the pools have noticed their connections are gone, a call may fail as on any restart;
    // then every answer must come back down the stream held by the other process.
    let answered = 0;
    for (let i = 0; i < 40 && answered < 3; i++) {
      const r = (await client
        .callTool({ name: 'svc_learn', arguments: { statement: `Learned after the restart ${i}`, scope: 'org:twin' } })
        .catch((err: Error) => ({ isError: true, content: [{ text: err.message }] }))) as {
        isError?: boolean;
        content: Array<{ text: string }>;
      };
      if (r.isError) await new Promise((done) => setTimeout(done, 250));
      else answered++;
    }
    expect(answered).toBe(3);
    await client.close();
  }, 120_000);
});
