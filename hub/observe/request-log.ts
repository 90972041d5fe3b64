import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import { errorFields, type HubLogger } from './logger.js';

// The outermost middleware: the request's id, and its one access line when the answer is done.
//
// The id is the caller's X-Request-Id when it is sane (1 to 128 of letters, digits and . _ : / + = @ -),
// else the trace-id of a valid W3C traceparent, else a new UUID. It goes back in X-Request-Id on every
// answer, into every problem document (requestIdOf) and onto the access line. The line names the
// route template the router matched (`/api/v1/engrams/:id`), never the raw path (which holds ids and
// query text); a request no route matched (refused before routing, an unknown path) is labelled by
// its surface (`/api/v1/*`, `/scim/v2/*`, `/admin/*`, ..., else `(other)`), as the metrics label it.

const REQUEST_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

const ids = new WeakMap<IncomingMessage, string>();

/** The id of the request this context answers ('' outside the middleware). */
export function requestIdOf(ctx: { req: IncomingMessage }): string {
  return ids.get(ctx.req) ?? '';
}

/** The trace-id of a traceparent header (W3C Trace Context level 1), or undefined when it is not valid. */
export function traceIdOf(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, parentId, , rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId!) || /^0+$/.test(parentId!)) return undefined;
  return traceId;
}

/** The route template a router matched, else the surface the path belongs to: never the path itself. */
export function routeLabel(ctx: { _matchedRoute?: string | RegExp; path: string }): string {
  if (typeof ctx._matchedRoute === 'string') return ctx._matchedRoute;
  const path = ctx.path;
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return '/api/v1/*';
  if (path.startsWith('/scim/')) return '/scim/v2/*';
  if (path === '/mcp' || path === '/sse' || path === '/messages') return path;
  if (path.startsWith('/admin')) return '/admin/*';
  if (path.startsWith('/me')) return '/me/*';
  if (path.startsWith('/oauth')) return '/oauth/*';
  return '(other)';
}

/** Who made a call, whichever surface admitted it: the API and MCP (principal), the pages (viewer), SCIM (caller). */
function actorOf(state: Record<string, unknown> | undefined): { org?: string; actor?: string } {
  const p = state?.principal as { org?: { slug?: string }; userId?: string } | undefined;
  if (p?.org) return { org: p.org.slug, actor: p.userId };
  const v = state?.viewer as { org?: { slug?: string }; userId?: string } | undefined;
  if (v?.org) return { org: v.org.slug, actor: v.userId };
  const c = state?.caller as { org?: { slug?: string }; tokenId?: string } | undefined;
  if (c?.org) return { org: c.org.slug, actor: c.tokenId ? `scim:${c.tokenId}` : undefined };
  return {};
}

/** The line of an answer the hub failed to give (5xx): the error's first line and stack, with the request's id and route. */
export function logInternalError(
  log: HubLogger,
  ctx: { req: IncomingMessage; method: string; _matchedRoute?: string | RegExp; path: string },
  err: unknown,
): void {
  const route = routeLabel(ctx);
  log.error(
    { event: 'internal_error', request_id: requestIdOf(ctx), method: ctx.method, route, ...errorFields(err, true) },
    `internal error on ${ctx.method} ${route}`,
  );
}

export function requestLog(log: HubLogger): Middleware {
  return async (ctx: Context, next: Next) => {
    const started = performance.now();
    const sent = ctx.get('x-request-id');
    const traceId = traceIdOf(ctx.get('traceparent') || undefined);
    const id = sent && REQUEST_ID.test(sent) ? sent : (traceId ?? randomUUID());
    ids.set(ctx.req, id);
    ctx.set('X-Request-Id', id);
    if (log.isLevelEnabled('info')) {
      let done = false;
      const line = () => {
        if (done) return;
        done = true;
        const status = ctx.res.writableFinished || ctx.res.headersSent ? ctx.status : 499;
        const fields: Record<string, unknown> = {
          event: 'request',
          request_id: id,
          ...(traceId && traceId !== id ? { trace_id: traceId } : {}),
          ...actorOf(ctx.state as Record<string, unknown>),
          method: ctx.method,
          route: routeLabel(ctx),
          status,
          latency_ms: Math.round((performance.now() - started) * 10) / 10,
          bytes: ctx.response.length ?? null,
        };
        if (!ctx.res.writableFinished) fields.aborted = true;
        if (status >= 500) log.error(fields as { event: string });
        else log.info(fields as { event: string });
      };
      ctx.res.once('finish', line);
      ctx.res.once('close', line);
    }
    await next();
  };
}
