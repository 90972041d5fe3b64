import type Koa from 'koa';
import { html } from './html.js';
import { done, errorBox, renderPage, type PageCtx } from './page-kit.js';

// The pages read and change nothing themselves: each is a client of the REST API under /api/v1,
// called in process (light-my-request drives the hub's own request handler, no socket), as the
// viewer, from the viewer's address. So a page goes through exactly the same authentication,
// permission checks, rate limits, validation and audit row as the REST call it mirrors.

export interface ApiAnswer<T> {
  status: number;
  ok: boolean;
  body: T;
  /** A problem document's detail (or its title), for the page to show. */
  problem: string | null;
}

/** A REST call that failed where the page cannot go on (a read the page is made of). */
export class ApiFailure extends Error {
  override name = 'ApiFailure';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface CallOptions {
  /** A JSON body (default), or a raw one with its content type (multipart uploads). */
  json?: unknown;
  raw?: { body: Buffer; contentType: string };
}

export class ApiClient {
  private handler?: (req: unknown, res: unknown) => void;

  constructor(private readonly app: Koa) {}

  async call<T = Record<string, unknown>>(ctx: PageCtx, method: string, path: string, o: CallOptions = {}): Promise<ApiAnswer<T>> {
    // The handler is made on first use: by then every middleware of the hub is in place.
    this.handler ??= this.app.callback() as never;
    const { inject } = await import('light-my-request');
    // The browser's Host goes along: links the API makes (invitations, sign-in links) name the hub as the browser reached it.
    const headers: Record<string, string> = {
      authorization: ctx.state.viewer.authorization,
      accept: 'application/json',
      ...(ctx.host ? { host: ctx.host } : {}),
    };
    let payload: Buffer | string | undefined;
    if (o.raw) {
      headers['content-type'] = o.raw.contentType;
      payload = o.raw.body;
    } else if (o.json !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(o.json);
    }
    const res = await inject(this.handler as never, {
      method: method as never,
      url: `/api/v1${path}`,
      headers,
      remoteAddress: ctx.ip,
      ...(payload !== undefined ? { payload } : {}),
    });
    let body: unknown = null;
    if (res.payload) {
      try {
        body = JSON.parse(res.payload);
      } catch {
        body = res.payload;
      }
    }
    const ok = res.statusCode < 400;
    const doc = (!ok && body && typeof body === 'object' ? body : {}) as { detail?: string; title?: string };
    return {
      status: res.statusCode,
      ok,
      body: body as T,
      problem: ok ? null : (doc.detail ?? doc.title ?? `the hub answered ${res.statusCode}`),
    };
  }

  /** A read the page needs: its body, or an ApiFailure the page turns into an error page. */
  async get<T = Record<string, unknown>>(ctx: PageCtx, path: string): Promise<T> {
    const r = await this.call<T>(ctx, 'GET', path);
    if (!r.ok) throw new ApiFailure(r.status, r.problem!);
    return r.body;
  }
}

/**
 * A form's action: the REST call, then back to `back` with a notice; or, when the hub refused
 * it, a page saying why, with the way back.
 */
export async function perform(
  ctx: PageCtx,
  api: ApiClient,
  method: string,
  path: string,
  o: CallOptions,
  back: string,
  code: string,
): Promise<void> {
  const r = await api.call(ctx, method, path, o);
  if (r.ok) return done(ctx, back, code);
  refusedPage(ctx, r, back);
}

/** What the hub said when it refused a form, with the way back. */
export function refusedPage(ctx: PageCtx, r: ApiAnswer<unknown>, back: string): void {
  renderPage(ctx, {
    title: 'That did not work',
    section: back.startsWith('/admin/') ? 'admin' : 'me',
    status: r.status,
    body: [errorBox(r.problem!), html`<p><a href="${back}">Back</a></p>`],
  });
}
