import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Database, HubState, Principal } from '../contracts.js';
import type { EmbedderProvider } from '../../engine/mcp/types.js';
import { openOrgBackend } from '../data/pg-backend.js';
import { AuditWriter } from '../audit/audit-log.js';
import { sweepRateLimits, takeToken } from '../limits/rate-limit.js';
import { openApiText } from '../openapi/spec.js';
import { loadConfig, type ConfigOptions, type HubConfig } from './config.js';
import { authenticate } from './auth.js';
import { HubProblem, PROBLEM_CONTENT_TYPE, problemDocument, toProblem } from './problem.js';
import { registerEngramRoutes } from './routes/engram-routes.js';
import { registerSearchRoutes } from './routes/search-routes.js';
import { registerRecordRoutes } from './routes/record-routes.js';
import { registerIdentityRoutes } from './routes/identity-routes.js';
import { registerPackRoutes } from './routes/pack-routes.js';

// The hub's Koa application. Order of the middleware, outermost first:
//   problem documents for every error (and for unknown routes), with no internals shown;
//   public routes (the OpenAPI description);
//   authentication (401), rate limiting (429), the audit row of the call (written after the
//   response, off the request path);
//   the REST routes under /api/v1.

export interface HubOptions extends ConfigOptions {
  db: Database;
  /** The dense leg; absent: BM25 only, and recall says so. */
  embedder?: EmbedderProvider;
  /** Operator messages (audit retries, internal errors). */
  log?: (message: string) => void;
}

export interface Hub {
  app: Koa<HubState>;
  config: HubConfig;
  audit: AuditWriter;
}

const BM25_ONLY: EmbedderProvider = {
  load: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'this hub has no embedding model configured' }),
  peek: () => undefined,
  probe: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'this hub has no embedding model configured' }),
};

const WRITE_METHODS = new Set(['POST', 'PATCH']);
export const PRINCIPAL_TTL_MS = 5000;

export async function createHub(opts: HubOptions): Promise<Hub> {
  const { db } = opts;
  const config = await loadConfig(db, opts);
  const log = opts.log ?? ((m: string) => process.stderr.write(`svc hub: ${m}\n`));
  const audit = new AuditWriter(db, config.auditKey, log);
  const embedder = opts.embedder ?? BM25_ONLY;
  const app = new Koa<HubState>();
  app.proxy = false;
  app.silent = true;

  app.use(async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new HubProblem(404, 'not-found', 'Not found', `no route ${ctx.method} ${ctx.path}`);
    } catch (err) {
      const problem = toProblem(fromKoaError(err));
      if (problem.status >= 500) log(`internal error on ${ctx.method} ${ctx.path}: ${(err as Error)?.stack ?? String(err)}`);
      ctx.status = problem.status;
      for (const [k, v] of Object.entries(problem.headers ?? {})) ctx.set(k, v);
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = JSON.stringify(problemDocument(problem, config.docsUrl, ctx.path));
    }
  });

  app.use(async (ctx, next) => {
    // A body that is not JSON is refused before parsing (the REST API speaks JSON; pack uploads
    // are the one multipart route and read their own body).
    const packUpload = ctx.method === 'POST' && ctx.path === '/api/v1/packs';
    if (ctx.request.length && !ctx.is('application/json') && !packUpload) {
      throw new HubProblem(415, 'unsupported-media-type', 'Unsupported media type', 'send the body as application/json');
    }
    await next();
  });
  app.use(
    bodyParser({
      enableTypes: ['json'],
      jsonLimit: config.bodyLimit,
      onError: (err) => {
        const status = (err as { status?: number }).status;
        if (status === 413) throw new HubProblem(413, 'payload-too-large', 'Payload too large', `the body is larger than ${config.bodyLimit}`);
        throw new HubProblem(400, 'malformed-json', 'Malformed JSON', `the body is not valid JSON: ${(err as Error).message.split('\n')[0]}`);
      },
    }),
  );

  app.use(async (ctx, next) => {
    // PostgreSQL text cannot hold NUL: refuse it up front, wherever it hides.
    if (ctx.querystring.includes('%00') || ctx.path.includes('\u0000') || hasNul(ctx.request.body)) {
      throw new HubProblem(400, 'validation-error', 'Invalid request', 'text must not contain NUL (\\u0000) characters', { errors: ['body: contains \\u0000'] });
    }
    await next();
  });

  const publicRouter = new Router();
  publicRouter.get('/api/v1/openapi.yaml', async (ctx) => {
    ctx.type = 'application/yaml';
    ctx.body = await openApiText();
  });
  publicRouter.get('/health', (ctx) => {
    ctx.body = { ok: true };
  });
  app.use(publicRouter.routes());

  let lastSweep = 0;
  // Resolved principals, briefly: a token's identity and scopes cost four queries, and a client
  // sends many requests in a row. Admin writes in this process clear it at once; in another hub
  // process a revoked key or a changed membership takes effect within PRINCIPAL_TTL_MS.
  const principals = new Map<string, { principal: Principal; until: number }>();
  const principalFor = async (header: string | undefined): Promise<Principal> => {
    const hit = header ? principals.get(header) : undefined;
    if (hit && hit.until > Date.now()) return hit.principal;
    const principal = await authenticate(db, config.jwt, header);
    if (principals.size >= 10_000) principals.clear();
    principals.set(header!, { principal, until: Date.now() + PRINCIPAL_TTL_MS });
    return principal;
  };
  const api = new Router<HubState>({ prefix: '/api/v1' });
  api.use(async (ctx, next) => {
    const principal = await principalFor(ctx.get('authorization') || undefined);
    // Writes that change who may see what (users, groups, keys, installed packs).
    const adminWrite = /^\/api\/v1\/(admin|packs)(\/|$)/.test(ctx.path) && ctx.method !== 'GET';
    const decision = await takeToken(db, `${principal.org.id}:${principal.tokenId}`, WRITE_METHODS.has(ctx.method), config.rateLimits);
    ctx.set('RateLimit-Limit', String(decision.limit));
    ctx.set('RateLimit-Remaining', String(decision.remaining));
    ctx.set('RateLimit-Reset', String(decision.reset));
    if (Date.now() - lastSweep > 60_000) {
      lastSweep = Date.now();
      void sweepRateLimits(db).catch(() => undefined);
    }
    const record = (outcome: number) =>
      audit.record(principal.org, {
        at: new Date().toISOString(),
        actor: principal.userName,
        token_id: principal.tokenId,
        action: `${ctx.method} ${ctx._matchedRoute ?? ctx.path}`,
        resource: ctx.state.auditResource ?? null,
        outcome,
        details: ctx.state.auditDetails ?? {},
      });
    if (!decision.allowed) {
      record(429);
      throw new HubProblem(429, 'rate-limited', 'Too many requests', `this token may make ${decision.limit} ${decision.limit === config.rateLimits.writesPerMinute && WRITE_METHODS.has(ctx.method) ? 'writes' : 'requests'} per minute; retry in ${decision.reset} s`, {
        headers: { 'Retry-After': String(decision.reset) },
      });
    }
    ctx.state.principal = principal;
    ctx.state.backend = openOrgBackend(db, principal.org, { readable: principal.readable });
    ctx.state.embedder = embedder;
    try {
      await next();
      record(ctx.status);
    } catch (err) {
      record(toProblem(fromKoaError(err)).status);
      throw err;
    } finally {
      if (adminWrite) principals.clear();
    }
  });
  registerIdentityRoutes(api, db);
  registerEngramRoutes(api);
  registerSearchRoutes(api, db);
  registerRecordRoutes(api);
  registerPackRoutes(api, db);
  app.use(api.routes());
  app.use(api.allowedMethods({ throw: true }));
  return { app, config, audit };
}

function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (depth > 64 || value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some((v) => hasNul(v, depth + 1));
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || hasNul(v, depth + 1));
}

/** Koa's and the router's own errors (405, 501) carry a status; keep it, hide their text otherwise. */
function fromKoaError(err: unknown): unknown {
  if (err instanceof HubProblem || !(err instanceof Error)) return err;
  const status = (err as { status?: number }).status;
  if (status === 405) return new HubProblem(405, 'method-not-allowed', 'Method not allowed', err.message);
  if (status === 501) return new HubProblem(501, 'not-implemented', 'Not implemented', err.message);
  return err;
}
