import Koa from 'koa';
import Router from '@koa/router';
import type { Database, HubState } from './contracts.js';
import type { EmbedderProvider } from '../engine/backend.js';
import { AuditWriter } from './audit/audit-log.js';
import { Checkpointer, CheckpointWriter, refuseCutChains } from './audit/checkpoints.js';
import { listOrgs } from './data/organizations.js';
import { NO_SECRET_KEY_WARNING } from './data/secret-box.js';
import { enablePostingsCache } from './data/postings-cache.js';
import { openApiText } from './openapi/spec.js';
import { loadConfig, type ConfigOptions, type HubConfig } from './config.js';
import { apiGate, isWrite } from './http/api-gate.js';
import { idempotency } from './http/idempotency.js';
import { Gatekeeper } from './http/gatekeeper.js';
import { MCP_PATHS, mcpGate, registerMcpRoutes } from './mcp/mcp-surface.js';
import { SseRelay } from './mcp/sse-relay.js';
import { registerToolPolicyRoutes } from './mcp/tool-policy.js';
import { DeliveryWorker } from './webhooks/delivery-worker.js';
import { registerWebhookRoutes } from './webhooks/webhook-routes.js';
import { FailedAuthGuard } from './limits/failed-auth.js';
import { HubProblem, PROBLEM_CONTENT_TYPE, problemDocument, toProblem } from './http/problem.js';
import { checkPath, jsonBody } from './http/request-input.js';
import { registerEngramRoutes } from './engrams/engram-routes.js';
import { registerSearchRoutes } from './engrams/search-routes.js';
import { registerRecordRoutes } from './engrams/record-routes.js';
import { registerIdentityRoutes, registerInvitationRoutes } from './people/identity-routes.js';
import { packUpload, registerPackRoutes } from './packs/pack-routes.js';
import { registerLoginRoutes, registerProviderAdminRoutes } from './login/login-routes.js';
import { registerOAuthRoutes } from './login/oauth-server.js';
import { registerGrantRoutes } from './login/grant-routes.js';
import { isFormRoute } from './login/browser-kit.js';
import type { RerankSetting } from '../engine/rerank/reranker.js';
import { scimSurface } from './scim/scim-routes.js';
import { registerScimTokenRoutes } from './scim/scim-token-routes.js';
import { pageSurface } from './pages/page-routes.js';
import { registerSignInPage } from './pages/sign-in-page.js';
import { registerAssetRoutes } from './pages/assets.js';
import { HubMetrics, metricsToken } from './monitor/metrics.js';
import { Readiness } from './monitor/ready.js';
import { createLogger, type HubLogger } from './observe/logger.js';
import { logInternalError, requestIdOf, requestLog } from './observe/request-log.js';

// The hub's Koa application. Order of the middleware, outermost first:
//   the request's id and its access line (hub/observe/request-log.ts);
//   problem documents for every error (and for unknown routes), with no internals shown;
//   the gate of /api/v1 but its public routes (api-gate.ts): authentication, rate limits, the
//   write transaction and the audit row of every call;
//   the MCP surface's gate (/mcp, /sse, /messages: the token and its limits; hub/mcp);
//   the request's path checked (request-input.ts);
//   the admin UI and the portal (/admin/, /me/: hub/pages), which call the REST routes in process;
//   the JSON body read and checked (request-input.ts);
//   a write's Idempotency-Key claimed, or its first answer replayed (idempotency.ts);
//   public routes (the OpenAPI description, health, redeeming an invitation, signing in);
//   the REST routes; the MCP routes.

export interface HubOptions extends ConfigOptions {
  db: Database;
  /** The dense leg; absent: BM25 only, and recall says so. */
  embedder?: EmbedderProvider;
  /** The cross-encoder recall and inject rerank with, when the deployment enables one (SVC_RERANKER). */
  reranker?: RerankSetting;
  /** The hub's logger (svc hub makes one); default: JSON lines on stderr at SVC_HUB_LOG_LEVEL (hub/observe/logger.ts). */
  logger?: HubLogger;
  /** Without `logger`: each log line (JSON) goes here instead of stderr; tests capture the log with it. */
  log?: (line: string) => void;
  /** The time webhook retries are scheduled by (tests move it). */
  clock?: () => number;
}

export interface Hub {
  app: Koa<HubState>;
  config: HubConfig;
  log: HubLogger;
  audit: AuditWriter;
  checkpoints: Checkpointer;
  webhooks: DeliveryWorker;
  /** Prometheus metrics (GET /metrics, hub/monitor/metrics.ts) and readiness (GET /ready, hub/monitor/ready.ts). */
  metrics: HubMetrics;
  readiness: Readiness;
  /** Stops the checkpoint timer and the webhook worker (after its sends in flight), then closes the audit writer within its drain window. */
  close(drainMs?: number): Promise<void>;
}

const BM25_ONLY: EmbedderProvider = {
  load: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'this hub has no embedding model configured' }),
  peek: () => undefined,
  probe: async () => ({ state: 'unavailable', model: 'bge-small-en-v1.5', reason: 'this hub has no embedding model configured' }),
};

export async function createHub(opts: HubOptions): Promise<Hub> {
  const { db } = opts;
  const config = await loadConfig(db, opts);
  const log = opts.logger ?? createLogger(opts.log ? { sink: opts.log } : {});
  enablePostingsCache(db, config.cacheEngrams);
  const audit = new AuditWriter(db, config.auditKey, { log });
  const checkpoints = new Checkpointer(db, config.auditKey, config.checkpointKey);
  for (const which of config.keysInDatabase) {
    log.warn(
      { event: 'config.key_in_database', key: which },
      which === 'audit'
        ? 'the audit HMAC key is kept in the database (set SVC_HUB_AUDIT_KEY): whoever can write the database can re-sign the audit chain; keep signed checkpoints outside it (SVC_HUB_CHECKPOINT_DIR) to catch that'
        : 'the audit checkpoint signing key is kept in the database (set SVC_HUB_CHECKPOINT_KEY): whoever can read the database can sign checkpoints',
    );
  }
  if (!config.secrets.keyId) log.warn({ event: 'config.no_secret_key' }, NO_SECRET_KEY_WARNING);
  let checkpointWriter: CheckpointWriter | undefined;
  if (config.checkpointDir) {
    // A chain cut below its newest checkpoint is not appended to: new rows would bury the cut.
    await refuseCutChains(db, config.checkpointDir, [config.checkpointKey.id], await listOrgs(db));
    checkpointWriter = new CheckpointWriter(
      checkpoints,
      config.checkpointDir,
      { everyRows: config.checkpointEveryRows, everyMs: config.checkpointIntervalMs },
      () => listOrgs(db),
      log,
    );
  }
  const embedder = opts.embedder ?? BM25_ONLY;
  const app = new Koa<HubState>();
  app.proxy = false;
  app.silent = true;

  // Every request counted by its route template (first, so its time includes everything below).
  const metrics = new HubMetrics({ db, audit, mcpIdleSeconds: config.mcp.idleSeconds }, { token: metricsToken(opts.env ?? process.env) });
  const readiness = new Readiness({ db, audit });
  app.use(metrics.middleware);

  app.use(requestLog(log));
  // Answers of the API, the OAuth server and SCIM carry secrets or private data: no cache keeps them.
  app.use((ctx, next) => {
    if (/^\/(api\/v1|oauth|scim)(\/|$)/.test(ctx.path)) ctx.set('cache-control', 'no-store');
    return next();
  });
  app.use(async (ctx, next) => {
    try {
      await next();
      // The router answers unknown routes and methods without a body: make them problems too
      // (its Allow header stays on a 405).
      if (ctx.body === undefined && ctx.status === 404)
        throw new HubProblem(404, 'not-found', 'Not found', `no route ${ctx.method} ${ctx.path}`);
      if (ctx.body === undefined && ctx.status === 405)
        throw new HubProblem(
          405,
          'method-not-allowed',
          'Method not allowed',
          `${ctx.method} is not allowed on ${ctx.path}; allowed: ${ctx.response.get('Allow')}`,
        );
      if (ctx.body === undefined && ctx.status === 501)
        throw new HubProblem(501, 'not-implemented', 'Not implemented', `${ctx.method} is not a method this API uses`);
    } catch (err) {
      const problem = toProblem(fromKoaError(err));
      if (problem.status >= 500) logInternalError(log, ctx, err);
      ctx.status = problem.status;
      for (const [k, v] of Object.entries(problem.headers ?? {})) ctx.set(k, v);
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = JSON.stringify(problemDocument(problem, config.docsUrl, ctx.path, requestIdOf(ctx)));
    }
  });

  // Everything under /api/v1 but the public routes needs a token, checked before anything else
  // reads the request: without one a caller learns nothing about which routes or methods exist,
  // and every authenticated call, refused input included, gets its audit row.
  const failedAuth = new FailedAuthGuard(db, config.rateLimits);
  const gatekeeper = new Gatekeeper({ db, failedAuth, config, audit, log });
  const gate = apiGate({ gate: gatekeeper, embedder, reranker: opts.reranker });
  const PUBLIC = new Set(['GET /api/v1/openapi.yaml', 'HEAD /api/v1/openapi.yaml', 'POST /api/v1/invitations/redeem']);
  app.use((ctx, next) =>
    (ctx.path === '/api/v1' || ctx.path.startsWith('/api/v1/')) && !PUBLIC.has(`${ctx.method} ${ctx.path}`) ? gate(ctx, next) : next(),
  );

  // SCIM (/scim/v2) takes SCIM tokens only and answers in its own error shape (hub/scim).
  app.use(scimSurface(gatekeeper));

  // The MCP surface checks the token and its limits the same way, before it reads anything.
  app.use(mcpGate(gatekeeper));

  app.use(checkPath);
  // The admin UI and the portal: server-rendered pages, each a client of the REST routes below.
  app.use(pageSurface({ app: app as never, db, config, gatekeeper, audit, log }));
  // The pack upload (multipart) and the sign-in forms read their own bodies.
  app.use(
    jsonBody(
      (ctx) => (MCP_PATHS.has(ctx.path) ? config.mcp.maxMessageBytes : config.bodyLimitBytes),
      (ctx) =>
        (ctx.method === 'POST' && ctx.path === '/api/v1/packs' && ctx.is('multipart/form-data') === 'multipart/form-data') ||
        isFormRoute(ctx.path),
    ),
  );

  // A pack upload is read before the Idempotency-Key claim opens its transaction.
  app.use(packUpload());
  app.use(idempotency(isWrite, config.secrets));

  const publicRouter = new Router();
  publicRouter.get('/api/v1/openapi.yaml', async (ctx) => {
    ctx.type = 'application/yaml';
    ctx.body = await openApiText();
  });
  metrics.register(publicRouter, failedAuth);
  readiness.register(publicRouter, config.docsUrl);
  publicRouter.get('/health', (ctx) => {
    ctx.body = { ok: true };
  });
  registerInvitationRoutes(publicRouter, { db, failedAuth, auditKey: config.auditKey });
  registerLoginRoutes(publicRouter, { db, config, audit, failedAuth, log });
  registerOAuthRoutes(publicRouter, { db, config, audit, failedAuth });
  registerSignInPage(publicRouter, db);
  registerAssetRoutes(publicRouter);
  app.use(publicRouter.routes());

  const api = new Router<HubState>({ prefix: '/api/v1' });
  registerIdentityRoutes(api, { checkpoints, config });
  registerEngramRoutes(api);
  registerSearchRoutes(api);
  registerRecordRoutes(api);
  registerPackRoutes(api, { outbound: config.outbound });
  registerToolPolicyRoutes(api);
  registerWebhookRoutes(api, { db, outbound: config.outbound, settings: config.webhooks });
  registerProviderAdminRoutes(api, { config });
  registerScimTokenRoutes(api);
  registerGrantRoutes(api);
  app.use(api.routes());
  app.use(api.allowedMethods());

  const relay = new SseRelay(db, log);
  await relay.start();
  const mcp = new Router<HubState>();
  registerMcpRoutes(mcp, { gate: gatekeeper, embedder, reranker: opts.reranker, relay });
  app.use(mcp.routes());
  app.use(mcp.allowedMethods());

  const webhooks = new DeliveryWorker({
    db,
    outbound: config.outbound,
    settings: config.webhooks,
    auditKey: config.auditKey,
    log,
    ...(opts.clock ? { clock: opts.clock } : {}),
  });
  await webhooks.start();
  metrics.attach({ webhooks, sseStreams: () => relay.open });
  return {
    app,
    config,
    log,
    audit,
    checkpoints,
    webhooks,
    metrics,
    readiness,
    async close(drainMs = 10_000) {
      // First: /ready answers 503 from now on.
      readiness.drain();
      await relay.close();
      await webhooks.close();
      await audit.close(drainMs);
      // Last: the rows the audit writer's close added are pinned too.
      await checkpointWriter?.close();
      metrics.close();
    },
  };
}

/** Koa's and the router's own errors (405, 501) carry a status; keep it, hide their text otherwise. */
function fromKoaError(err: unknown): unknown {
  if (err instanceof HubProblem || !(err instanceof Error)) return err;
  const status = (err as { status?: number }).status;
  if (status === 405) return new HubProblem(405, 'method-not-allowed', 'Method not allowed', err.message);
  if (status === 501) return new HubProblem(501, 'not-implemented', 'Not implemented', err.message);
  return err;
}
