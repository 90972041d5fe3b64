import type { ParameterizedContext } from 'koa';
import type { HubConfig } from '../config.js';
import { hubOrigin } from '../http/hub-origin.js';
import { badRequest, forbidden, HubProblem } from '../http/problem.js';
import { readLimited } from '../http/request-input.js';
import { escapeHtml } from '../pages/html.js';

// What the hub's browser-facing routes share: cookie settings, the same-origin check of
// state-changing calls, and plain HTML pages (escaped, no script, a strict policy).

type AnyCtx = ParameterizedContext;

export function cookieOptions(ctx: AnyCtx, config: HubConfig, path: string, maxAgeMs: number) {
  const secure = ctx.secure || (config.publicUrl?.startsWith('https:') ?? false);
  // Behind a TLS terminator the hub sees http; the browser does not.
  if (secure) ctx.cookies.secure = true;
  return { httpOnly: true, sameSite: 'lax' as const, secure, path, maxAge: maxAgeMs, overwrite: true };
}

/** State-changing calls carried by a cookie: a browser names its origin, and it must be ours. */
export function sameOrigin(ctx: AnyCtx, config: HubConfig): void {
  const from = ctx.get('origin');
  if (from && from !== hubOrigin(ctx, config)) throw forbidden(`a request from ${from} may not use this hub's sign-in session`);
}

export const esc = escapeHtml;

/**
 * Answers a small HTML page. `body` must be built with esc() around every value from outside.
 * `formTargets` are the origins a form on the page may lead to, redirects included (form-action).
 */
export function htmlPage(ctx: AnyCtx, title: string, body: string, formTargets: string[] = []): void {
  ctx.set(
    'content-security-policy',
    `default-src 'none'; form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}; frame-ancestors 'none'; base-uri 'none'`,
  );
  ctx.set('x-frame-options', 'DENY');
  ctx.set('cache-control', 'no-store');
  ctx.set('referrer-policy', 'no-referrer');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${esc(title)}</title></head>\n<body><main><h1>${esc(title)}</h1>\n${body}\n</main></body></html>\n`;
}

/** Routes whose body is an HTML form (application/x-www-form-urlencoded), read by readForm. */
export const isFormRoute = (path: string): boolean =>
  path === '/oauth/token' || path === '/oauth/authorize/decide' || /^\/auth\/[^/]+\/[^/]+\/acs$/.test(path);

export async function readForm(ctx: AnyCtx, limitBytes = 64 * 1024): Promise<URLSearchParams> {
  if (!ctx.is('application/x-www-form-urlencoded'))
    throw new HubProblem(415, 'unsupported-media-type', 'Unsupported media type', 'send the body as application/x-www-form-urlencoded');
  try {
    return new URLSearchParams(new TextDecoder('utf-8', { fatal: true }).decode(await readLimited(ctx as never, limitBytes)));
  } catch (err) {
    if (err instanceof HubProblem) throw err;
    throw badRequest('the form is not valid UTF-8');
  }
}
