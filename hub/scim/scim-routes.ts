import Router from '@koa/router';
import type { Context, Middleware, ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { HubState, Queryable } from '../contracts.js';
import type { AuditEntry } from '../audit/audit-log.js';
import { tooMany, type Gatekeeper } from '../http/gatekeeper.js';
import { checkPath, jsonBody } from '../http/request-input.js';
import { isWrite } from '../http/api-gate.js';
import { errorBody, ScimError, scimInvalid, toScimError } from './scim-errors.js';
import { matches, parseFilter } from './scim-filter.js';
import { patchOps } from './scim-patch.js';
import {
  attributeList,
  CONTENT_TYPE,
  LIST_SCHEMA,
  MAX_COUNT,
  project,
  resourceTypes,
  schemas,
  serviceProviderConfig,
  type ResourceKind,
} from './scim-schema.js';
import { scimCaller, type ScimCaller } from './scim-tokens.js';
import { createScimUser, deleteScimUser, getUser, listUsers, patchScimUser, replaceScimUser } from './scim-users.js';
import { createScimGroup, deleteScimGroup, getGroup, listGroups, patchScimGroup, replaceScimGroup } from './scim-groups.js';
import { hubOrigin } from '../http/hub-origin.js';
import { logInternalError } from '../observe/request-log.js';

// The SCIM 2.0 surface, /scim/v2 (RFC 7644), outside the /api/v1 gate: it takes SCIM tokens
// only, and answers SCIM error bodies, never problem documents. Like REST, it refuses an address
// that failed authentication too often (the gatekeeper's guard), reads the body only once the
// token is known, runs the call as the gatekeeper's audited unit (runAudited: a write in one
// transaction with its audit row; the row of a read or a refusal queued on the same writer). The
// audit actor is "scim:<token name>" and the action names what was done (scim.user.create).
// Each SCIM token is counted under the same per-minute policies as an API key (requests, writes;
// 429 with Retry-After), before its body is read: one identity provider cannot hold the hub.

export const SCIM_ROOT = '/scim/v2';

interface ScimState {
  caller: ScimCaller;
  q: Queryable;
  base: string;
  action?: string;
  resource?: string;
  /** What the call changed beyond its request, for its audit row (a delete's erasure counts). */
  auditDetails?: Record<string, unknown>;
}

type ScimCtx = RouterContext<ScimState> & ParameterizedContext<ScimState>;

function send(ctx: Context | ScimCtx, status: number, body: unknown): void {
  ctx.status = status;
  ctx.type = CONTENT_TYPE;
  ctx.body = JSON.stringify(body);
}

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[v.length - 1] : v);

function whole(ctx: ScimCtx, name: string): number | undefined {
  const raw = one(ctx.query[name]);
  if (raw === undefined || raw === '') return undefined;
  if (!/^-?\d{1,9}$/.test(raw)) throw scimInvalid('invalidValue', `${name} must be an integer (got "${raw.slice(0, 50)}")`);
  return Number(raw);
}

/** A ListResponse of the resources the filter matches, paged by startIndex and count (§3.4.2). */
function listResponse(ctx: ScimCtx, kind: ResourceKind, all: Record<string, unknown>[]): Record<string, unknown> {
  const text = one(ctx.query.filter);
  const filter = text ? parseFilter(text) : undefined;
  const only = attributeList(one(ctx.query.attributes));
  const excluded = attributeList(one(ctx.query.excludedAttributes));
  const hits = filter ? all.filter((r) => matches(kind, filter, r)) : all;
  const startIndex = Math.max(1, whole(ctx, 'startIndex') ?? 1);
  const count = Math.min(MAX_COUNT, Math.max(0, whole(ctx, 'count') ?? MAX_COUNT));
  const page = hits.slice(startIndex - 1, startIndex - 1 + count);
  return {
    schemas: [LIST_SCHEMA],
    totalResults: hits.length,
    startIndex,
    itemsPerPage: page.length,
    Resources: page.map((r) => project(kind, r, only, excluded)),
  };
}

function projected(ctx: ScimCtx, kind: ResourceKind, r: Record<string, unknown>): Record<string, unknown> {
  return project(kind, r, attributeList(one(ctx.query.attributes)), attributeList(one(ctx.query.excludedAttributes)));
}

function routes(): ReturnType<Router<ScimState>['routes']> {
  const r = new Router<ScimState>({ prefix: SCIM_ROOT });
  const org = (ctx: ScimCtx) => ctx.state.caller.org;
  const mark = (ctx: ScimCtx, action: string, resource?: string) => {
    ctx.state.action = action;
    if (resource) ctx.state.resource = resource;
  };

  r.get('/ServiceProviderConfig', (ctx) => send(ctx, 200, serviceProviderConfig(ctx.state.base)));
  r.get('/ResourceTypes', (ctx) => {
    const all = resourceTypes(ctx.state.base);
    send(ctx, 200, { schemas: [LIST_SCHEMA], totalResults: all.length, startIndex: 1, itemsPerPage: all.length, Resources: all });
  });
  r.get('/ResourceTypes/:id', (ctx) => {
    const found = resourceTypes(ctx.state.base).find((t) => t.id === ctx.params.id);
    if (!found) throw new ScimError(404, `no ResourceType ${ctx.params.id}`);
    send(ctx, 200, found);
  });
  r.get('/Schemas', (ctx) => {
    const all = schemas(ctx.state.base);
    send(ctx, 200, { schemas: [LIST_SCHEMA], totalResults: all.length, startIndex: 1, itemsPerPage: all.length, Resources: all });
  });
  r.get('/Schemas/:id', (ctx) => {
    const found = schemas(ctx.state.base).find((t) => t.id === ctx.params.id);
    if (!found) throw new ScimError(404, `no Schema ${ctx.params.id}`);
    send(ctx, 200, found);
  });

  // Users and Groups answer alike. Filters are evaluated in memory over every user (or group) of
  // the organization: fine for the thousands an organization has; push them down to SQL if that
  // ever changes. A PATCH answers 200 with the resource (the RFC allows 204; Entra and Okta
  // read neither).
  const RESOURCES = [
    {
      path: '/Users',
      kind: 'User',
      tag: 'user',
      list: listUsers,
      get: getUser,
      create: createScimUser,
      replace: replaceScimUser,
      patch: patchScimUser,
      remove: deleteScimUser,
    },
    {
      path: '/Groups',
      kind: 'Group',
      tag: 'group',
      list: listGroups,
      get: getGroup,
      create: createScimGroup,
      replace: replaceScimGroup,
      patch: patchScimGroup,
      remove: deleteScimGroup,
    },
  ] as const;
  for (const x of RESOURCES) {
    const kind = x.kind as ResourceKind;
    r.get(x.path, async (ctx) => {
      mark(ctx, `scim.${x.tag}.list`);
      send(ctx, 200, listResponse(ctx, kind, await x.list(ctx.state.q, org(ctx), ctx.state.base)));
    });
    r.get(`${x.path}/:id`, async (ctx) => {
      mark(ctx, `scim.${x.tag}.get`, `${x.tag}:${ctx.params.id}`);
      send(ctx, 200, projected(ctx, kind, await x.get(ctx.state.q, org(ctx), ctx.params.id!, ctx.state.base)));
    });
    r.post(x.path, async (ctx) => {
      mark(ctx, `scim.${x.tag}.create`);
      const made = await x.create(ctx.state.q, org(ctx), ctx.request.body, ctx.state.base);
      mark(ctx, `scim.${x.tag}.create`, `${x.tag}:${made.id}`);
      ctx.set('Location', String((made.meta as { location: string }).location));
      send(ctx, 201, made);
    });
    r.put(`${x.path}/:id`, async (ctx) => {
      mark(ctx, `scim.${x.tag}.replace`, `${x.tag}:${ctx.params.id}`);
      send(ctx, 200, await x.replace(ctx.state.q, org(ctx), ctx.params.id!, ctx.request.body, ctx.state.base));
    });
    r.patch(`${x.path}/:id`, async (ctx) => {
      mark(ctx, `scim.${x.tag}.patch`, `${x.tag}:${ctx.params.id}`);
      send(
        ctx,
        200,
        projected(ctx, kind, await x.patch(ctx.state.q, org(ctx), ctx.params.id!, patchOps(ctx.request.body), ctx.state.base)),
      );
    });
    r.delete(`${x.path}/:id`, async (ctx) => {
      mark(ctx, `scim.${x.tag}.delete`, `${x.tag}:${ctx.params.id}`);
      const ended = await x.remove(ctx.state.q, org(ctx), ctx.params.id!);
      if (ended) ctx.state.auditDetails = ended;
      ctx.status = 204;
    });
  }
  return r.routes();
}

const UNAUTHORIZED = new ScimError(
  401,
  'a SCIM token is required: Authorization: Bearer svc_scim_… (API keys and hub tokens are not accepted here)',
  undefined,
  {
    'WWW-Authenticate': 'Bearer realm="svc-scim", error="invalid_token"',
  },
);

export function scimSurface(gate: Gatekeeper): Middleware<HubState> {
  const { db, config, audit, failedAuth, log } = gate.deps;
  const router = routes();
  const body = jsonBody(
    () => config.bodyLimitBytes,
    () => false,
  );
  const notFound = (ctx: ScimCtx) => async () => {
    throw new ScimError(404, `no SCIM endpoint ${ctx.method} ${ctx.path}`);
  };

  async function caller(ctx: Context): Promise<ScimCaller> {
    failedAuth.check(ctx.ip, false);
    const m = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
    const found = m ? await scimCaller(db, m[1]!) : null;
    if (found) return found;
    await failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
    throw UNAUTHORIZED;
  }

  async function serve(ctx: ScimCtx): Promise<void> {
    const who = ctx.state.caller;
    const write = isWrite(ctx.method, ctx.path);
    const decision = await gate.admitKey(who.org, `scim:${who.tokenId}`, write, (k, v) => ctx.set(k, v));
    if (!decision.allowed) {
      audit.record(who.org, {
        at: new Date().toISOString(),
        actor: `scim:${who.tokenName}`,
        token_id: who.tokenId,
        action: 'scim.request',
        resource: null,
        outcome: 429,
        details: { method: ctx.method, path: ctx.path },
      });
      const { perMinute, writesPerMinute } = config.rateLimits;
      throw tooMany(decision, `this SCIM token may make ${perMinute} requests and ${writesPerMinute} writes per minute`);
    }
    // SCIM bodies are application/scim+json: read them as the JSON they are.
    if (ctx.is('application/scim+json'))
      ctx.req.headers['content-type'] = ctx.get('content-type').replace(/application\/scim\+json/i, 'application/json');
    const run = () => body(ctx as unknown as Context, () => router(ctx, notFound(ctx)));
    const entry = (outcome: number): AuditEntry => ({
      at: new Date().toISOString(),
      actor: `scim:${who.tokenName}`,
      token_id: who.tokenId,
      action: ctx.state.action ?? 'scim.request',
      resource: ctx.state.resource ?? null,
      outcome,
      details: { method: ctx.method, path: ctx.path, ...ctx.state.auditDetails },
    });
    await gate.runAudited(who.org, {
      write,
      work: async (q) => {
        ctx.state.q = q;
        await run();
      },
      outcome: () => ctx.status,
      failure: (err) => toScimError(err).status,
      row: entry,
    });
  }

  return async (ctx, next) => {
    if (ctx.path !== SCIM_ROOT && !ctx.path.startsWith(`${SCIM_ROOT}/`)) return next();
    const scim = ctx as unknown as ScimCtx;
    try {
      await checkPath(ctx, async () => undefined);
      scim.state = { caller: await caller(ctx), q: db, base: `${hubOrigin(ctx, config)}${SCIM_ROOT}` };
      await serve(scim);
    } catch (err) {
      const e = toScimError(err);
      if (e.status >= 500) logInternalError(log, ctx, err);
      for (const [k, v] of Object.entries(e.headers)) ctx.set(k, v);
      send(ctx, e.status, errorBody(e));
    }
  };
}
