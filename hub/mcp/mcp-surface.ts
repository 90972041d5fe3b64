import type { Middleware } from 'koa';
import type Router from '@koa/router';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createSvcServer, runToolCall } from '../../engine/mcp/server.js';
import type { ToolContext } from '../../engine/mcp/types.js';
import { isToolProfile } from '../../engine/mcp/tools.js';
import { withMcpChallenge } from '../login/oauth-server.js';
import { hubOrigin } from '../http/hub-origin.js';
import type { HubState, Principal } from '../contracts.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { Policy } from '../access/policy.js';
import { packageVersion } from '../../engine/package-info.js';
import { tooMany, type Gatekeeper } from '../http/gatekeeper.js';
import { badRequest, HubProblem, notFoundProblem } from '../http/problem.js';
import type { Ctx } from '../http/route-kit.js';
import { toolPipeline, type PipelineDeps } from './pipeline.js';
import { closeSession, openSession, recordClient, useSession, type McpProfile, type McpSession } from './sessions.js';
import { PROCESS_ID, type SseRelay } from './sse-relay.js';

// The MCP surface on the hub's port (spec: "MCP surface"), served by the SDK's transports over
// the engine's own tool layer (engine/mcp), so the hub's tools are `svc mcp`'s:
//   /mcp      streamable HTTP. Each request is handled on its own (the SDK's stateless mode) on
//             whichever process it reaches; the session is a database row (Mcp-Session-Id), so
//             no process holds state between requests. GET (a server-to-client stream) is not
//             offered: the hub sends nothing unasked. A lone, well-formed tools/call (nearly
//             every request of a session) is run directly by the engine's runToolCall, the
//             function the SDK's Server calls, and answered as the SDK would: building a Server
//             and a transport per request and the SDK's schema checks of the request and of the
//             answer cost more than the recall itself (bench hub: MCP recall p50 1.38x REST's).
//             Anything else, malformed requests included, goes through the SDK.
//   /sse      the older HTTP+SSE pair: GET opens the stream (first event `endpoint`), POST
//   /messages?sessionId=… sends a message; it runs where it lands and its answer goes down the
//             stream through the relay (sse-relay.ts).
// Before any of it: the token (401 with WWW-Authenticate), the token's request and MCP message
// limits, then the body (JSON, at most the MCP message size). Each tool call then goes through
// the pipeline (pipeline.ts).

export const MCP_PATHS = new Set(['/mcp', '/sse', '/messages']);

const VERSION = packageVersion();

/** The token and the limits of the MCP routes, before their body is read. */
export function mcpGate(gate: Gatekeeper): Middleware<HubState> {
  const limits = gate.deps.config.rateLimits;
  return async (ctx, next) => {
    if (!MCP_PATHS.has(ctx.path)) return next();
    const header = ctx.get('authorization') || undefined;
    const set = (k: string, v: string) => ctx.set(k, v);
    const who = await gate.principal(ctx.ip, header, set, ctx).catch((err: unknown) => {
      // An MCP client without a token learns here where to get one (hub/login/oauth-server.ts).
      throw withMcpChallenge(err, hubOrigin(ctx, gate.deps.config), ctx.path === '/sse' ? '/sse' : '/mcp');
    });
    const { principal, decision } = await gate.admit(who, header, false, set, ['mcp-messages']);
    if (!decision.allowed)
      throw tooMany(
        decision,
        `this token may send ${limits.mcpMessagesPerMinute} MCP messages and ${limits.perMinute} requests per minute`,
      );
    ctx.state.principal = principal;
    await next();
  };
}

export interface McpSurfaceDeps extends PipelineDeps {
  relay: SseRelay;
}

export function registerMcpRoutes(router: Router<HubState>, deps: McpSurfaceDeps): void {
  const { db, config } = deps.gate.deps;
  const limits = config.mcp;

  const profileOf = (ctx: Ctx): McpProfile => {
    const v = typeof ctx.query.profile === 'string' ? ctx.query.profile : 'full';
    if (!isToolProfile(v)) throw badRequest(`profile must be full or lean (got "${v}")`);
    return v;
  };

  const contextOf = (p: Principal): ToolContext => ({
    backend: openOrgBackend(db, p.org, Policy.of(p)),
    embedder: deps.embedder,
    now: () => new Date(),
  });

  /** An MCP server for one session's call(s), its tools behind the pipeline. */
  const serverFor = (p: Principal, session: McpSession) =>
    createSvcServer({ profile: session.profile, version: VERSION, context: contextOf(p), around: toolPipeline(deps, p, session) }).server;

  /** Sends the rest of the answer through the raw response: what Koa set (limits, the session id) first. */
  const takeOver = (ctx: Ctx) => {
    ctx.respond = false;
    for (const [k, v] of Object.entries(ctx.response.headers)) if (v !== undefined) ctx.res.setHeader(k, v as string | string[]);
  };

  // ---------------------------------------------------------------- streamable HTTP

  router.post('/mcp', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const body = ctx.request.body;
    if (body === undefined) throw badRequest('send a JSON-RPC message (or a batch of them) as the body');
    const messages = (Array.isArray(body) ? body : [body]) as Array<{ method?: unknown; params?: { clientInfo?: { name?: unknown } } }>;
    if (messages.length === 0) throw badRequest('a JSON-RPC batch must hold at least one message');
    if (messages.length > limits.maxBatch) {
      throw new HubProblem(
        413,
        'payload-too-large',
        'Payload too large',
        `a JSON-RPC batch holds at most ${limits.maxBatch} messages (got ${messages.length}); send the rest in further requests`,
      );
    }
    // The gate counted the request as one message: each further one of a batch counts too.
    const header = ctx.get('authorization') || undefined;
    for (let i = 1; i < messages.length; i++) {
      const { decision } = await deps.gate.admit(p, header, false, (k, v) => ctx.set(k, v), ['mcp-messages']);
      if (!decision.allowed)
        throw tooMany(
          decision,
          `this token may send ${config.rateLimits.mcpMessagesPerMinute} MCP messages per minute, each message of a batch counted`,
        );
    }
    const init = messages.find((m) => m?.method === 'initialize');
    let session: McpSession;
    if (init) {
      const clientName = typeof init.params?.clientInfo?.name === 'string' ? init.params.clientInfo.name : undefined;
      session = await openSession(db, p, { transport: 'http', profile: profileOf(ctx), clientName, limits });
      ctx.set('Mcp-Session-Id', session.id);
    } else {
      const id = ctx.get('mcp-session-id');
      if (!id) throw badRequest('send the Mcp-Session-Id header that the answer to initialize gave (or initialize first)');
      session = await useSession(db, p, id, limits);
      if (session.transport !== 'http')
        throw notFoundProblem(`MCP session ${id} is an SSE session: post its messages to /messages?sessionId=${id}`);
    }
    const call = loneToolCall(ctx, messages);
    if (call) {
      const { id, name, args } = call;
      try {
        const result = await runToolCall(session.profile, { name, args, client: {} }, () => contextOf(p), toolPipeline(deps, p, session));
        ctx.body = { jsonrpc: '2.0', id, result };
      } catch (err) {
        // As the SDK answers a handler that throws: a JSON-RPC error, not an HTTP one.
        const e = err as { code?: unknown; message?: unknown };
        const code = Number.isSafeInteger(e.code) ? (e.code as number) : -32603;
        ctx.body = { jsonrpc: '2.0', id, error: { code, message: typeof e.message === 'string' ? e.message : 'Internal error' } };
      }
      ctx.type = 'application/json';
      return;
    }
    const server = serverFor(p, session);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    takeOver(ctx);
    ctx.res.on('close', () => void server.close().catch(() => undefined));
    await transport.handleRequest(ctx.req, ctx.res, body);
  });

  router.delete('/mcp', async (ctx: Ctx) => {
    const id = ctx.get('mcp-session-id');
    if (!id) throw badRequest('send the Mcp-Session-Id header of the session to end');
    const session = await useSession(db, ctx.state.principal, id, limits);
    await closeSession(db, ctx.state.principal.org, session.id);
    ctx.status = 204;
  });

  router.get('/mcp', () => {
    throw new HubProblem(
      405,
      'method-not-allowed',
      'Method not allowed',
      'this hub sends no server-initiated messages: POST JSON-RPC to /mcp (DELETE ends a session)',
      {
        headers: { Allow: 'POST, DELETE' },
      },
    );
  });

  // ---------------------------------------------------------------- HTTP+SSE

  router.get('/sse', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const transport = new SSEServerTransport('/messages', ctx.res);
    const session = await openSession(db, p, {
      transport: 'sse',
      profile: profileOf(ctx),
      holder: PROCESS_ID,
      id: transport.sessionId,
      limits,
    });
    takeOver(ctx);
    deps.relay.hold(session.id, transport, p.org, limits.idleSeconds);
    ctx.res.on('close', () => {
      deps.relay.release(session.id);
      void closeSession(db, p.org, session.id).catch(() => undefined);
    });
    await transport.start();
  });

  router.post('/messages', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const id = typeof ctx.query.sessionId === 'string' ? ctx.query.sessionId : '';
    if (!id) throw badRequest('name the session: /messages?sessionId=<the id of the endpoint event>');
    const session = await useSession(db, p, id, limits);
    if (session.transport !== 'sse') throw notFoundProblem(`MCP session ${id} is a streamable HTTP session: post its messages to /mcp`);
    const message = ctx.request.body as JSONRPCMessage | undefined;
    if (message === undefined || typeof message !== 'object' || Array.isArray(message))
      throw badRequest('send one JSON-RPC message as the body');
    const m = message as { method?: unknown; params?: { clientInfo?: { name?: unknown } } };
    if (m.method === 'initialize' && typeof m.params?.clientInfo?.name === 'string') {
      await recordClient(db, p.org, session.id, m.params.clientInfo.name);
      session.clientName = m.params.clientInfo.name;
    }
    const answer = await run(serverFor(p, session), message);
    if (answer) await deps.relay.deliver(p.org, session, answer);
    ctx.status = 202;
    ctx.body = { accepted: true };
  });
}

/**
 * The one tools/call of a request the SDK would take without complaint: the headers it checks
 * (Accept of both JSON and SSE, a JSON body, a protocol version it supports) and a request shape
 * its schema accepts (no task, the arguments an object). Anything else is left to the SDK, so its
 * answers to malformed requests stay the only ones.
 */
function loneToolCall(
  ctx: Ctx,
  messages: unknown[],
): { id: string | number; name: string; args: Record<string, unknown> | undefined } | undefined {
  if (messages.length !== 1) return undefined;
  const m = messages[0] as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
  if (m === null || typeof m !== 'object' || m.jsonrpc !== '2.0' || m.method !== 'tools/call') return undefined;
  if (typeof m.id !== 'string' && !(typeof m.id === 'number' && Number.isInteger(m.id))) return undefined;
  const params = m.params as { name?: unknown; arguments?: unknown; task?: unknown } | undefined;
  if (!isPlainObject(params) || typeof params.name !== 'string' || params.task !== undefined) return undefined;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) return undefined;
  const accept = ctx.get('accept');
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (ctx.request.type !== 'application/json') return undefined;
  const version = ctx.get('mcp-protocol-version');
  if (version && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  return { id: m.id, name: params.name, args: params.arguments as Record<string, unknown> | undefined };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Runs one message through a server over an in-memory pair; resolves to its answer (none for a notification). */
async function run(server: ReturnType<typeof createSvcServer>['server'], message: JSONRPCMessage): Promise<JSONRPCMessage | undefined> {
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  try {
    if (!('id' in message) || !('method' in message)) {
      await client.send(message);
      return undefined;
    }
    return await new Promise<JSONRPCMessage>((resolve, reject) => {
      client.onmessage = (answer) => {
        if ('id' in answer && answer.id === message.id) resolve(answer);
      };
      client.onerror = reject;
      void client.start().then(() => client.send(message), reject);
    });
  } finally {
    await server.close().catch(() => undefined);
  }
}
