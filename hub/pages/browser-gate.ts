import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Next } from 'koa';
import type { Database } from '../contracts.js';
import type { HubConfig } from '../config.js';
import type { Gatekeeper } from '../http/gatekeeper.js';
import { hubOrigin } from '../http/hub-origin.js';
import { HubProblem, toProblem } from '../http/problem.js';
import { readLimited } from '../http/request-input.js';
import type { HubLogger } from '../observe/logger.js';
import { logInternalError } from '../observe/request-log.js';
import { cookieOptions } from '../login/browser-kit.js';
import { mintToken, sessionFromCookie, SESSION_COOKIE, type BrowserSession } from '../login/login-sessions.js';
import { ApiFailure } from './api-call.js';
import { html } from './html.js';
import { errorBox, renderPage, securityHeaders, type PageCtx, type PageForm, type Viewer } from './page-kit.js';

// Who may see a page, before any page runs: a signed-in browser (the session cookie) or a
// caller with a Bearer header. Browsers without a session are sent to sign in. A form posted
// with the session cookie must carry the CSRF token (double-submit: the same value in a cookie
// and in the form, HMAC-bound to the session so a planted cookie is worthless) and, when the
// browser names one, come from this hub's origin. /admin/ needs the admin role.

const CSRF_COOKIE = 'svc_csrf';
const MAX_FORM_BYTES = 64 * 1024;
const MAX_UPLOAD_BYTES = 20 * 1024 * 1024;
const MAX_CACHED_TOKENS = 10_000;

export interface GateDeps {
  db: Database;
  config: HubConfig;
  gatekeeper: Gatekeeper;
  /** Operator messages: a page's internal error is logged here and shown as a plain 500 page. */
  log: HubLogger;
}

/** The paths the pages own. */
export const isPagePath = (path: string): boolean =>
  path === '/admin' || path.startsWith('/admin/') || path === '/me' || path.startsWith('/me/');

export function browserGate({ db, config, gatekeeper, log }: GateDeps) {
  const csrfKey = createHash('sha256').update(`svc-csrf\0${config.jwt.current}`).digest();
  const sign = (sessionId: string, nonce: string) => createHmac('sha256', csrfKey).update(`${sessionId}.${nonce}`).digest('base64url');
  const csrfValid = (sessionId: string, token: string | undefined): boolean => {
    const [nonce, mac] = (token ?? '').split('.');
    if (!nonce || !mac) return false;
    const want = Buffer.from(sign(sessionId, nonce));
    const got = Buffer.from(mac);
    return want.length === got.length && timingSafeEqual(want, got);
  };
  // A hub token per browser session, minted once and used until a minute before it expires.
  const tokens = new Map<string, { header: string; expiresAt: number }>();
  const tokenFor = async (s: BrowserSession): Promise<string> => {
    const cached = tokens.get(s.id);
    if (cached && cached.expiresAt - Date.now() > 60_000) return cached.header;
    const { token, expiresAt } = await mintToken(db, config.jwt, s);
    if (tokens.size >= MAX_CACHED_TOKENS) tokens.clear();
    const header = `Bearer ${token}`;
    tokens.set(s.id, { header, expiresAt: expiresAt.getTime() });
    return header;
  };

  async function viewerOf(ctx: PageCtx): Promise<Viewer | null> {
    const header = ctx.get('authorization');
    if (header) {
      const p = await gatekeeper.principal(ctx.ip, header, (k, v) => ctx.set(k, v));
      return {
        name: p.userName,
        userId: p.userId,
        role: p.role,
        org: { id: p.org.id, slug: p.org.slug },
        authorization: header,
        csrf: null,
      };
    }
    const s = await sessionFromCookie(db, ctx.cookies.get(SESSION_COOKIE));
    if (!s) return null;
    let csrf = ctx.cookies.get(CSRF_COOKIE);
    if (!csrfValid(s.id, csrf)) {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') csrf = undefined;
      else {
        const nonce = randomBytes(18).toString('base64url');
        csrf = `${nonce}.${sign(s.id, nonce)}`;
        ctx.cookies.set(CSRF_COOKIE, csrf, { ...cookieOptions(ctx, config, '/', 12 * 3600_000), sameSite: 'strict' });
      }
    }
    return {
      name: s.userName,
      userId: s.userId,
      role: s.role,
      org: { id: s.org.id, slug: s.org.slug },
      authorization: await tokenFor(s),
      csrf: csrf ?? '',
    };
  }

  /** A cookie-carried form must come from our pages: our origin, and the token of this session. */
  function checkCsrf(ctx: PageCtx, viewer: Viewer, form: PageForm): void {
    const origin = ctx.get('origin');
    if (origin && origin !== hubOrigin(ctx, config))
      throw new HubProblem(403, 'forbidden', 'Forbidden', `a form from ${origin} may not act on this hub; use the hub's own pages`);
    if (ctx.get('sec-fetch-site') === 'cross-site')
      throw new HubProblem(403, 'forbidden', 'Forbidden', 'a form from another site may not act on this hub');
    const sent = form.fields.get('_csrf') ?? '';
    const want = viewer.csrf ?? '';
    if (!want || !sent || sent.length !== want.length || !timingSafeEqual(Buffer.from(sent), Buffer.from(want))) {
      throw new HubProblem(
        403,
        'forbidden',
        'Forbidden',
        'the form has no valid security token (it may be from an older page); go back, reload the page and try again',
      );
    }
  }

  return async (ctx: PageCtx, next: Next): Promise<void> => {
    securityHeaders(ctx);
    try {
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD' && ctx.method !== 'POST') {
        ctx.set('allow', 'GET, HEAD, POST');
        throw new HubProblem(405, 'method-not-allowed', 'Method not allowed', `${ctx.method} is not used by these pages`);
      }
      if (ctx.path === '/admin' || ctx.path === '/me') return ctx.redirect(`${ctx.path}/`);
      const viewer = await viewerOf(ctx);
      if (!viewer) {
        if (ctx.method === 'POST') throw new HubProblem(401, 'unauthorized', 'Not signed in', 'sign in, then send the form again');
        return ctx.redirect(`/sign-in?return_to=${encodeURIComponent(ctx.originalUrl)}`);
      }
      ctx.state.viewer = viewer;
      // Who may use the path is settled before a byte of the body is read.
      if (ctx.path.startsWith('/admin/') && viewer.role !== 'admin') {
        throw new HubProblem(
          403,
          'forbidden',
          'Admins only',
          `the admin pages need the admin role; ${viewer.name} is ${viewer.role === 'editor' ? 'an editor' : 'a viewer'}. Your own page is /me/.`,
        );
      }
      if (ctx.method === 'POST') {
        const form = await readPageForm(ctx);
        if (viewer.csrf !== null) checkCsrf(ctx, viewer, form);
        ctx.state.form = form;
      }
      await next();
      if (ctx.body === undefined && ctx.status === 404) throw new HubProblem(404, 'not-found', 'Not found', `there is no page ${ctx.path}`);
    } catch (err) {
      const status = err instanceof ApiFailure ? err.status : toProblem(err).status;
      if (status === 401 && ctx.method === 'GET') return ctx.redirect(`/sign-in?return_to=${encodeURIComponent(ctx.originalUrl)}`);
      const internal = status >= 500 && !(err instanceof ApiFailure);
      if (internal) logInternalError(log, ctx, err);
      const message = internal
        ? 'the hub could not show this page (the error is in its log)'
        : err instanceof ApiFailure
          ? err.message
          : toProblem(err).message;
      const title =
        status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : status === 401 ? 'Not signed in' : 'Something went wrong';
      const section = ctx.path.startsWith('/admin/') && ctx.state.viewer?.role === 'admin' ? 'admin' : 'me';
      renderPage(ctx, {
        title,
        section,
        status,
        body: [errorBox(message), html`<p><a href="${section === 'admin' ? '/admin/' : '/me/'}">Back to the start page</a></p>`],
      });
    }
  };
}

/** The one page form that uploads a file (the pack install of /admin/packs); every other form is small and URL-encoded. */
const UPLOAD_PATHS = new Set(['/admin/packs']);

/** A posted form, URL-encoded or (uploads) multipart, within its path's size limit. */
async function readPageForm(ctx: PageCtx): Promise<PageForm> {
  if (ctx.is('application/x-www-form-urlencoded')) {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(await readLimited(ctx as never, MAX_FORM_BYTES));
    return { fields: new URLSearchParams(text), files: new Map() };
  }
  if (ctx.is('multipart/form-data')) {
    if (!UPLOAD_PATHS.has(ctx.path))
      throw new HubProblem(
        415,
        'unsupported-media-type',
        'Unsupported media type',
        `${ctx.path} takes a URL-encoded form (application/x-www-form-urlencoded), not an upload`,
      );
    return readMultipart(ctx);
  }
  throw new HubProblem(
    415,
    'unsupported-media-type',
    'Unsupported media type',
    'pages take HTML forms (application/x-www-form-urlencoded or multipart/form-data)',
  );
}

/** An upload form: one file and a few small fields, at most MAX_UPLOAD_BYTES in all; settles if the client leaves. */
async function readMultipart(ctx: PageCtx): Promise<PageForm> {
  const tooLarge = () =>
    new HubProblem(413, 'payload-too-large', 'Payload too large', `an upload is at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB`);
  if (Number(ctx.get('content-length') || 0) > MAX_UPLOAD_BYTES + MAX_FORM_BYTES) throw tooLarge();
  const { default: Busboy } = await import('busboy');
  const req = ctx.req;
  return new Promise<PageForm>((resolve, reject) => {
    const form: PageForm = { fields: new URLSearchParams(), files: new Map() };
    let failed: Error | undefined;
    let settled = false;
    let size = 0;
    const done = (err?: Error) => {
      if (settled) return;
      settled = true;
      req.off('aborted', gone).off('close', closed).off('error', gone);
      if (err) reject(err);
      else resolve(form);
    };
    const gone = () => {
      req.unpipe(bb);
      done(new HubProblem(400, 'bad-request', 'Bad request', 'the connection closed before the whole form arrived'));
    };
    const closed = () => !req.complete && gone();
    const stop = (e: Error) => {
      req.unpipe(bb);
      req.resume();
      ctx.set('Connection', 'close');
      done(e);
    };
    const bb = Busboy({ headers: req.headers, limits: { files: 1, fileSize: MAX_UPLOAD_BYTES, fields: 20, fieldSize: MAX_FORM_BYTES } });
    bb.on('field', (name, value) => form.fields.append(name, value));
    bb.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_UPLOAD_BYTES) stop(tooLarge());
        else chunks.push(c);
      });
      stream.on('limit', () => stop(tooLarge()));
      stream.on('end', () => form.files.set(name, { filename: info.filename ?? name, data: Buffer.concat(chunks) }));
    });
    bb.on('filesLimit', () => (failed ??= new HubProblem(413, 'payload-too-large', 'Payload too large', 'this form takes one file')));
    bb.on('error', (e: Error) =>
      done(new HubProblem(400, 'bad-request', 'Bad request', `the upload is not valid multipart: ${e.message}`)),
    );
    bb.on('close', () => done(failed));
    req.once('aborted', gone).once('close', closed).once('error', gone);
    req.pipe(bb);
  });
}
