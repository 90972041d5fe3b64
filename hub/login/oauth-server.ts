import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Database, Org, Queryable, Role } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { hashKey } from '../access/tokens.js';
import { authChanged } from '../access/epoch.js';
import { clientKey } from '../limits/sign-in-starts.js';
import { findOrg, orgById } from '../data/organizations.js';
import { hubOrigin } from '../http/hub-origin.js';
import { HubProblem } from '../http/problem.js';
import { cookieOptions, esc, htmlPage, readForm, sameOrigin } from './browser-kit.js';
import type { LoginDeps } from './login-routes.js';
import { listProviders } from './identity-providers.js';
import { createSession, mintToken, sessionFromCookie, SESSION_COOKIE, type LoginSession } from './login-sessions.js';

// The hub as the OAuth 2.0 authorization server of its own MCP surface, as the MCP
// specification's authorization section asks: a client pointed at /mcp without a token gets 401
// naming the protected resource metadata (RFC 9728); it finds this server's metadata (RFC 8414),
// registers itself (RFC 7591; public clients, PKCE S256 required, RFC 7636), and sends the
// person to /oauth/authorize. They sign in through their organization's provider (hub/login),
// consent, and the client exchanges the code for the hub's own JWT, issued for the resource it
// named (RFC 8707), with a refresh token that is replaced at each use.
//
// Hardening (issue 25): the only resources are the MCP endpoints, and such a token works there
// only (hub/http/auth.ts checkAudience); the consent page says exactly that. Anonymous
// registration and authorization requests are limited per client address and swept when
// unused; an invalid request is a page on the hub, never a redirect; a refresh is validated
// before it rotates, and a spent refresh token used again ends its whole grant (RFC 9700).
// Grants are listed and revoked through grant-routes.ts.
//
//   GET  /.well-known/oauth-protected-resource[/mcp|/sse]   resource metadata
//   GET  /.well-known/oauth-authorization-server            server metadata
//   POST /oauth/register                                    dynamic client registration
//   GET  /oauth/authorize                                   start (then sign in, then consent)
//   POST /oauth/authorize/decide                            the consent form
//   POST /oauth/token                                       authorization_code, refresh_token

const REQUEST_MINUTES = 10;
const CODE_SECONDS = 60;
const ACCESS_SECONDS = 3600;
const GRANT_HOURS = 30 * 24;
const CSRF_COOKIE = 'svc_oauth_csrf';
/** Per client address and minute: registrations, and authorization requests (each stores a row). */
const REGISTER_PER_MINUTE = 10;
const AUTHORIZE_PER_MINUTE = 30;
/** A registered client that got no token within this is swept (and so are its pending requests). */
const UNUSED_CLIENT_HOURS = 24;

type AnyCtx = ParameterizedContext;

const S = CONTROL_SCHEMA;

/** The resources tokens may be issued for: this hub's MCP endpoints, nothing else (RFC 8707). */
const resources = (origin: string): string[] => [`${origin}/mcp`, `${origin}/sse`];

/**
 * Counts one anonymous request of `what` from the address (IPv6 by its /64) in the shared
 * rate_limits table (every hub process sees the same count; sweepRateLimits drops old windows): a
 * sliding minute, as the token policies. Returns the seconds to wait when over `quota`, else 0.
 */
async function overLimit(db: Database, what: string, ip: string, quota: number, now = Date.now()): Promise<number> {
  const start = Math.floor(now / 60_000) * 60;
  const key = `addr:${clientKey(ip)}`;
  const r = await db.query<{ hits: number; prev: number }>(
    `WITH up AS (
       INSERT INTO ${S}.rate_limits (token_key, bucket, window_start, hits) VALUES ($1, $2, $3, 1)
       ON CONFLICT (token_key, bucket, window_start) DO UPDATE SET hits = ${S}.rate_limits.hits + 1 RETURNING hits)
     SELECT up.hits, coalesce((SELECT hits FROM ${S}.rate_limits WHERE token_key = $1 AND bucket = $2 AND window_start = $3 - 60), 0) AS prev FROM up`,
    [key, what, start],
  );
  const { hits, prev } = r.rows[0]!;
  const elapsed = now / 1000 - start;
  if (Number(prev) * (1 - elapsed / 60) + Number(hits) <= quota) return 0;
  return Math.max(1, Math.ceil(60 - elapsed));
}

/** Drops what anonymous requests left behind: expired requests and codes, clients never used, spent refresh tokens past their grant. */
async function sweep(db: Database): Promise<void> {
  await db.query(`DELETE FROM ${S}.oauth_requests WHERE expires_at < now()`);
  await db.query(`DELETE FROM ${S}.oauth_codes WHERE expires_at < now()`);
  await db.query(
    `DELETE FROM ${S}.oauth_clients WHERE (last_used_at IS NULL AND created_at < now() - make_interval(hours => $1)) OR last_used_at < now() - make_interval(hours => $2)`,
    [UNUSED_CLIENT_HOURS, GRANT_HOURS + 24],
  );
  await db.query(`DELETE FROM ${S}.oauth_spent_refresh WHERE expires_at < now()`);
  await db.query(`DELETE FROM ${S}.oauth_grants WHERE created_at < now() - make_interval(hours => $1)`, [GRANT_HOURS + 24]);
}

const SECRET = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/;

type Rotated = { refresh: string; session: LoginSession } | { reused: { org: Org; grant: string; user: string } } | null;

/**
 * A refresh: the grant its token names gets a new secret, the old one is recorded as spent, in
 * one transaction. A spent token presented again (even at the same moment as its first use) means
 * it leaked (RFC 9700 section 4.14.2): the whole grant ends, with every access token from it.
 */
async function rotateGrant(db: Database, refresh: string, clientId: string): Promise<Rotated> {
  const m = SECRET.exec(refresh);
  const org = m ? await orgById(db, m[1]!) : null;
  if (!m || !org) return null;
  const s = ident(org.schema);
  const spent = hashKey(m[2]!);
  const secret = randomBytes(32).toString('base64url');
  return db.transaction(async (q) => {
    const row = (
      await q.query<{ id: string; user_id: string; expires_at: Date }>(
        `UPDATE ${s}.login_sessions l SET secret_hash = $2 FROM ${s}.users u
          WHERE l.secret_hash = $1 AND l.client_id = $3 AND u.id = l.user_id AND u.active AND l.revoked_at IS NULL AND l.expires_at > now()
          RETURNING l.id, l.user_id, l.expires_at`,
        [spent, hashKey(secret), clientId],
      )
    ).rows[0];
    if (row) {
      await q.query(
        `INSERT INTO ${S}.oauth_spent_refresh (secret_hash, org_id, grant_id, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
        [spent, org.id, row.id, row.expires_at],
      );
      return { refresh: `${org.id}.${secret}`, session: { id: row.id, org, userId: row.user_id, expiresAt: new Date(row.expires_at) } };
    }
    const reused = (
      await q.query<{ grant_id: string }>(`SELECT grant_id FROM ${S}.oauth_spent_refresh WHERE secret_hash = $1 AND org_id = $2`, [
        spent,
        org.id,
      ])
    ).rows[0];
    if (!reused) return null;
    const user = await endGrant(q, org, reused.grant_id);
    return { reused: { org, grant: reused.grant_id, user } };
  });
}

/** Ends a grant; the name of its person (for the audit row). */
async function endGrant(q: Queryable, org: Org, id: string): Promise<string> {
  const s = ident(org.schema);
  const r = await q.query<{ name: string }>(
    `UPDATE ${s}.login_sessions l SET revoked_at = coalesce(l.revoked_at, now()) FROM ${s}.users u WHERE l.id = $1 AND l.client_id IS NOT NULL AND u.id = l.user_id RETURNING u.name`,
    [id],
  );
  await authChanged(q, org);
  return r.rows[0]?.name ?? 'unknown';
}

/** RFC 6749 section 5.2 errors: JSON, never a problem document (OAuth clients parse these). */
class OAuthError extends Error {
  override name = 'OAuthError';
  constructor(
    readonly status: number,
    readonly code: string,
    description: string,
  ) {
    super(description);
  }
}

const formBody = (ctx: AnyCtx): Promise<URLSearchParams> =>
  readForm(ctx).catch((err: Error) => {
    throw new OAuthError(400, 'invalid_request', err.message);
  });

/** Redirect URIs a public client may register: https, or http on loopback (native apps, RFC 8252). */
function checkRedirect(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length > 2000)
    throw new OAuthError(400, 'invalid_redirect_uri', 'each redirect URI must be a string of at most 2,000 characters');
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new OAuthError(400, 'invalid_redirect_uri', `"${raw.slice(0, 100)}" is not a URL`);
  }
  const loopback = u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);
  if ((u.protocol !== 'https:' && !loopback) || u.hash || u.username || u.password) {
    throw new OAuthError(
      400,
      'invalid_redirect_uri',
      `"${raw.slice(0, 100)}" must be https, or http on a loopback address, without a fragment or credentials`,
    );
  }
  return u.href;
}

interface Client {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
}

async function clientById(db: Database, id: string | null): Promise<Client | null> {
  if (!id || id.length > 100) return null;
  return (
    (await db.query<Client>(`SELECT client_id, client_name, redirect_uris FROM ${S}.oauth_clients WHERE client_id = $1`, [id])).rows[0] ??
    null
  );
}

/** Loopback redirect URIs match on any port (RFC 8252 section 7.3); others exactly. */
function redirectAllowed(client: Client, uri: string): boolean {
  return client.redirect_uris.some((r) => {
    if (r === uri) return true;
    const a = new URL(r);
    let b: URL;
    try {
      b = new URL(uri);
    } catch {
      return false;
    }
    return (
      a.protocol === 'http:' && a.hostname === b.hostname && b.protocol === 'http:' && a.pathname === b.pathname && a.search === b.search
    );
  });
}

interface PendingRequest {
  id: string;
  client_id: string;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  resource: string;
  csrf: string;
}

export function registerOAuthRoutes(router: Router, deps: LoginDeps): void {
  const { db, config } = deps;
  const origin = (ctx: AnyCtx) => hubOrigin(ctx, config);

  const oauthErrors = async (ctx: AnyCtx, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      ctx.status = err.status;
      ctx.set('cache-control', 'no-store');
      ctx.body = { error: err.code, error_description: err.message };
    }
  };

  for (const suffix of ['', '/mcp', '/sse']) {
    router.get(`/.well-known/oauth-protected-resource${suffix}`, (ctx) => {
      ctx.body = {
        resource: `${origin(ctx)}${suffix || '/mcp'}`,
        authorization_servers: [origin(ctx)],
        bearer_methods_supported: ['header'],
        resource_name: 'svc hub',
      };
    });
  }

  router.get('/.well-known/oauth-authorization-server', (ctx) => {
    const o = origin(ctx);
    ctx.body = {
      issuer: o,
      authorization_endpoint: `${o}/oauth/authorize`,
      token_endpoint: `${o}/oauth/token`,
      registration_endpoint: `${o}/oauth/register`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    };
  });

  router.post('/oauth/register', oauthErrors, async (ctx) => {
    // Registration needs no credentials: limited per address (one address cannot use up everyone's
    // registrations), and clients never used are swept.
    const wait = await overLimit(db, 'oauth-register', ctx.ip, REGISTER_PER_MINUTE);
    if (wait) {
      ctx.set('retry-after', String(wait));
      throw new OAuthError(
        429,
        'temporarily_unavailable',
        `too many client registrations from this address (${REGISTER_PER_MINUTE} a minute); retry in ${wait} s`,
      );
    }
    await sweep(db);
    const body = (ctx.request.body ?? {}) as Record<string, unknown>;
    const uris = body.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10)
      throw new OAuthError(400, 'invalid_redirect_uri', 'redirect_uris must list 1 to 10 URIs');
    const redirects = uris.map(checkRedirect);
    const method = body.token_endpoint_auth_method ?? 'none';
    if (method !== 'none')
      throw new OAuthError(
        400,
        'invalid_client_metadata',
        'only public clients (token_endpoint_auth_method "none", with PKCE) may register',
      );
    for (const [field, allowed] of [
      ['grant_types', ['authorization_code', 'refresh_token']],
      ['response_types', ['code']],
    ] as const) {
      const v = body[field];
      if (v !== undefined && (!Array.isArray(v) || v.some((x) => !(allowed as readonly string[]).includes(x))))
        throw new OAuthError(400, 'invalid_client_metadata', `${field} may hold only ${allowed.join(', ')}`);
    }
    const name =
      typeof body.client_name === 'string' && body.client_name.trim()
        ? body.client_name
            .replace(/[\u0000-\u001f\u007f]/g, ' ')
            .trim()
            .slice(0, 100)
        : 'an MCP client';
    const id = randomUUID();
    const row = (
      await db.query<{ created_at: Date }>(
        `INSERT INTO ${S}.oauth_clients (client_id, client_name, redirect_uris) VALUES ($1, $2, $3) RETURNING created_at`,
        [id, name, redirects],
      )
    ).rows[0]!;
    ctx.status = 201;
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      client_id: id,
      client_id_issued_at: Math.floor(new Date(row.created_at).getTime() / 1000),
      client_name: name,
      redirect_uris: redirects,
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  });

  /** An error page: for requests whose redirect URI cannot be trusted (never redirect there). */
  const errorPage = (ctx: AnyCtx, status: number, message: string) => {
    ctx.status = status;
    htmlPage(ctx, 'Cannot connect this client', `<p>${esc(message)}</p>`);
  };

  router.get('/oauth/authorize', async (ctx) => {
    // Each request stores a row until the person decides: limited per address, expired ones swept.
    const wait = await overLimit(db, 'oauth-authorize', ctx.ip, AUTHORIZE_PER_MINUTE);
    if (wait) {
      ctx.set('retry-after', String(wait));
      return errorPage(
        ctx,
        429,
        `Too many authorization requests from this address (${AUTHORIZE_PER_MINUTE} a minute): try again in ${wait} s.`,
      );
    }
    const q = ctx.query as Record<string, string | string[] | undefined>;
    const one = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : null);
    const client = await clientById(db, one('client_id'));
    if (!client) return errorPage(ctx, 400, 'This client is not registered with the hub (unknown client_id).');
    const redirect = one('redirect_uri') ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0]! : null);
    if (!redirect || !redirectAllowed(client, redirect)) return errorPage(ctx, 400, 'The redirect_uri is not one this client registered.');
    // Anyone may register a client with any redirect URI, so an invalid request is never sent
    // back to it (the hub would be an open redirector, RFC 9700 section 4.11.2): it stays here.
    const invalid = (description: string) =>
      errorPage(ctx, 400, `This authorization request is not valid: ${description}. Start again from your MCP client.`);
    if (one('response_type') !== 'code') return invalid('response_type must be code');
    const challenge = one('code_challenge');
    if (!challenge || one('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge))
      return invalid('PKCE is required: code_challenge with code_challenge_method S256');
    const resource = one('resource') ?? `${origin(ctx)}/mcp`;
    if (!resources(origin(ctx)).includes(resource)) return invalid(`this hub issues tokens for ${origin(ctx)}/mcp (or /sse) only`);
    const state = one('state');
    if (state !== null && state.length > 500) return invalid('state is longer than 500 characters');
    await sweep(db);
    const id = randomBytes(24).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    await db.query(
      `INSERT INTO ${S}.oauth_requests (id, client_id, redirect_uri, state, code_challenge, resource, csrf, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [id, client.client_id, redirect, state, challenge, resource, csrf, new Date(Date.now() + REQUEST_MINUTES * 60_000)],
    );
    ctx.redirect(`/oauth/authorize/consent?request=${id}`);
  });

  const pending = async (id: unknown): Promise<(PendingRequest & { client_name: string }) | null> =>
    typeof id === 'string' && /^[A-Za-z0-9_-]{32}$/.test(id)
      ? ((
          await db.query<PendingRequest & { client_name: string }>(
            `SELECT r.*, c.client_name FROM ${S}.oauth_requests r JOIN ${S}.oauth_clients c ON c.client_id = r.client_id WHERE r.id = $1 AND r.expires_at > now()`,
            [id],
          )
        ).rows[0] ?? null)
      : null;

  // Signed in: ask for consent. Not signed in: ask for the organization, then send the person
  // to its provider, which brings them back here.
  router.get('/oauth/authorize/consent', async (ctx) => {
    const request = await pending(ctx.query.request);
    if (!request) return errorPage(ctx, 400, 'This authorization request is unknown or expired: start again from your MCP client.');
    const session = await sessionFromCookie(db, ctx.cookies.get(SESSION_COOKIE));
    const slug = typeof ctx.query.org === 'string' ? ctx.query.org : undefined;
    // `org` present but another (or empty: "use another organization"): choose and sign in again.
    if (!session || (slug !== undefined && slug !== session.org.slug)) return signInPage(ctx, request, slug || undefined);
    ctx.cookies.set(CSRF_COOKIE, request.csrf, cookieOptions(ctx, config, '/oauth/', REQUEST_MINUTES * 60_000));
    const to = new URL(request.redirect_uri);
    const role: Record<Role, string> = { viewer: 'a viewer (reads only)', editor: 'an editor', admin: 'an admin' };
    const days = Math.round(GRANT_HOURS / 24);
    const can = session.role === 'viewer' ? 'read the memory you can read' : 'read and write the memory you can read and write';
    htmlPage(
      ctx,
      'Connect an MCP client',
      `<p><strong>${esc(request.client_name)}</strong> (it returns to <strong>${esc(to.host)}</strong>) asks to connect to svc as <strong>${esc(session.userName)}</strong>, ${esc(role[session.role])} of <strong>${esc(session.org.slug)}</strong>.</p>
<p>If you allow it, for ${days} days it can ${can} in ${esc(session.org.slug)}, through MCP only. It cannot use the REST API or the admin and portal pages, nor manage people, keys or tokens.</p>
<p>You can revoke it at any time in <a href="/me/api-keys">your portal</a>.</p>
<form method="post" action="/oauth/authorize/decide">
<input type="hidden" name="request" value="${esc(request.id)}"><input type="hidden" name="csrf" value="${esc(request.csrf)}">
<button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny">Deny</button>
</form>
<p><a href="/oauth/authorize/consent?request=${esc(request.id)}&amp;org=">Use another organization</a></p>`,
      [to.origin],
    );
  });

  async function signInPage(ctx: AnyCtx, request: PendingRequest, slug: string | undefined): Promise<void> {
    const org = slug ? await findOrg(db, slug).catch(() => null) : null;
    const back = `/oauth/authorize/consent?request=${request.id}`;
    if (!org) {
      if (slug) ctx.status = 404;
      htmlPage(
        ctx,
        'Sign in to svc',
        `${slug ? `<p>There is no organization "${esc(slug)}" on this hub.</p>` : ''}<form method="get" action="/oauth/authorize/consent">
<input type="hidden" name="request" value="${esc(request.id)}">
<label>Organization <input name="org" required autocomplete="organization"></label> <button type="submit">Continue</button>
</form>`,
      );
      return;
    }
    const providers = await listProviders(db, org);
    const link = (name: string) => `/auth/${org.slug}/${name}/login?return_to=${encodeURIComponent(`${back}&org=${org.slug}`)}`;
    if (providers.length === 1) return ctx.redirect(link(providers[0]!.name));
    htmlPage(
      ctx,
      `Sign in to ${org.slug}`,
      providers.length
        ? `<ul>${providers.map((p) => `<li><a href="${esc(link(p.name))}">Sign in with ${esc(p.name)} (${esc(p.kind)})</a></li>`).join('')}</ul>`
        : `<p>${esc(org.slug)} has no identity provider yet: ask an admin to add one, or give your MCP client an API key instead.</p>`,
    );
  }

  router.post('/oauth/authorize/decide', async (ctx) => {
    sameOrigin(ctx, config);
    const form = await formBody(ctx).catch(() => new URLSearchParams());
    const request = await pending(form.get('request'));
    if (!request) return errorPage(ctx, 400, 'This authorization request is unknown or expired: start again from your MCP client.');
    const csrf = form.get('csrf') ?? '';
    const cookie = ctx.cookies.get(CSRF_COOKIE) ?? '';
    const same = (a: string, b: string) => a.length === b.length && a.length > 0 && timingSafeEqual(Buffer.from(a), Buffer.from(b));
    if (!same(csrf, request.csrf) || !same(cookie, request.csrf))
      return errorPage(ctx, 403, 'This form was not sent from the consent page of this hub (anti-forgery check failed).');
    const session = await sessionFromCookie(db, ctx.cookies.get(SESSION_COOKIE));
    if (!session) return errorPage(ctx, 401, 'You are no longer signed in: start again from your MCP client.');
    await db.query(`DELETE FROM ${S}.oauth_requests WHERE id = $1`, [request.id]);
    ctx.cookies.set(CSRF_COOKIE, null, cookieOptions(ctx, config, '/oauth/', 0));
    const to = new URL(request.redirect_uri);
    if (request.state !== null) to.searchParams.set('state', request.state);
    to.searchParams.set('iss', origin(ctx));
    if (form.get('decision') !== 'allow') {
      to.searchParams.set('error', 'access_denied');
      return ctx.redirect(to.href);
    }
    const code = randomBytes(32).toString('base64url');
    // Codes never exchanged stay behind: each new one clears the expired.
    await db.query(`DELETE FROM ${S}.oauth_codes WHERE expires_at < now()`);
    // The grant remembers the browser session it was consented from (signing out ends it) and
    // that session's provider (removing the provider ends it).
    const provider = (
      await db.query<{ provider_id: string | null }>(`SELECT provider_id FROM ${ident(session.org.schema)}.login_sessions WHERE id = $1`, [
        session.id,
      ])
    ).rows[0];
    await db.query(
      `INSERT INTO ${S}.oauth_codes (code_hash, client_id, org_id, user_id, redirect_uri, code_challenge, resource, expires_at, consent_session, provider_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        hashKey(code),
        request.client_id,
        session.org.id,
        session.userId,
        request.redirect_uri,
        request.code_challenge,
        request.resource,
        new Date(Date.now() + CODE_SECONDS * 1000),
        session.id,
        provider?.provider_id ?? null,
      ],
    );
    deps.audit.record(session.org, {
      at: new Date().toISOString(),
      actor: session.userName,
      token_id: session.id,
      action: 'oauth.consent',
      resource: `oauth_client:${request.client_id}`,
      outcome: 302,
      details: { client: request.client_name },
    });
    to.searchParams.set('code', code);
    ctx.redirect(to.href);
  });

  router.post('/oauth/token', oauthErrors, async (ctx) => {
    ctx.set('cache-control', 'no-store');
    const form = await formBody(ctx);
    const client = await clientById(db, form.get('client_id'));
    if (!client) throw new OAuthError(401, 'invalid_client', 'unknown client_id');
    const grant = form.get('grant_type');
    let session: LoginSession;
    let refresh: string;
    let resource: string;
    if (grant === 'authorization_code') {
      const code = form.get('code') ?? '';
      const row = (
        await db.query<{
          client_id: string;
          org_id: string;
          user_id: string;
          redirect_uri: string;
          code_challenge: string;
          resource: string;
          consent_session: string | null;
          provider_id: string | null;
        }>(
          `DELETE FROM ${S}.oauth_codes WHERE code_hash = $1 AND expires_at > now() RETURNING client_id, org_id, user_id, redirect_uri, code_challenge, resource, consent_session, provider_id`,
          [hashKey(code)],
        )
      ).rows[0];
      if (!row || row.client_id !== client.client_id)
        return refuse(ctx, 'invalid_grant', "the code is unknown, used already, expired, or not this client's");
      if (form.get('redirect_uri') !== row.redirect_uri)
        return refuse(ctx, 'invalid_grant', "redirect_uri differs from the authorization request's");
      const verifier = form.get('code_verifier') ?? '';
      if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || createHash('sha256').update(verifier).digest('base64url') !== row.code_challenge) {
        return refuse(ctx, 'invalid_grant', 'code_verifier does not match the code_challenge');
      }
      const asked = form.get('resource');
      if (asked !== null && asked !== row.resource)
        throw new OAuthError(400, 'invalid_target', "resource differs from the authorization request's");
      const org = await orgById(db, row.org_id);
      if (!org) return refuse(ctx, 'invalid_grant', 'the organization no longer exists');
      const made = await createSession(db, org, row.user_id, {
        clientId: client.client_id,
        hours: GRANT_HOURS,
        providerId: row.provider_id,
      });
      await db.query(`INSERT INTO ${S}.oauth_grants (id, org_id, client_id, consent_session, resource) VALUES ($1, $2, $3, $4, $5)`, [
        made.session.id,
        org.id,
        client.client_id,
        row.consent_session,
        row.resource,
      ]);
      session = made.session;
      refresh = made.cookie;
      resource = row.resource;
    } else if (grant === 'refresh_token') {
      // Checked before the token rotates: a refused refresh leaves the refresh token as it was.
      resource = form.get('resource') ?? `${origin(ctx)}/mcp`;
      if (!resources(origin(ctx)).includes(resource))
        throw new OAuthError(400, 'invalid_target', `this server issues tokens for ${origin(ctx)}/mcp (or /sse) only`);
      const rotated = await rotateGrant(db, form.get('refresh_token') ?? '', client.client_id);
      if (rotated && 'reused' in rotated) {
        const { org, grant: id, user } = rotated.reused;
        deps.audit.record(org, {
          at: new Date().toISOString(),
          actor: user,
          token_id: id,
          action: 'oauth.refresh_reused',
          resource: `oauth_grant:${id}`,
          outcome: 400,
          details: { client: client.client_id, ended: true },
        });
      }
      if (!rotated || 'reused' in rotated)
        return refuse(ctx, 'invalid_grant', 'the refresh token is unknown, used already, expired or revoked');
      session = rotated.session;
      refresh = rotated.refresh;
    } else {
      throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    }
    await db.query(`UPDATE ${S}.oauth_clients SET last_used_at = now() WHERE client_id = $1`, [client.client_id]);
    const { token, expiresAt } = await mintToken(db, config.jwt, session, { seconds: ACCESS_SECONDS, audience: resource });
    ctx.body = {
      access_token: token,
      token_type: 'Bearer',
      expires_in: Math.round((expiresAt.getTime() - Date.now()) / 1000),
      refresh_token: refresh,
    };
  });

  async function refuse(ctx: AnyCtx, code: string, description: string): Promise<never> {
    await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
    throw new OAuthError(400, code, description);
  }
}

/** 401s of the MCP surface name the resource metadata, so clients find the authorization server. */
export function withMcpChallenge(err: unknown, origin: string, path: string): unknown {
  if (!(err instanceof HubProblem) || err.status !== 401) return err;
  const challenge = `${err.headers?.['WWW-Authenticate'] ?? 'Bearer realm="svc"'}, resource_metadata="${origin}/.well-known/oauth-protected-resource${path}"`;
  return new HubProblem(401, err.slug, err.title, err.message, {
    errors: err.errors,
    members: err.members,
    headers: { ...err.headers, 'WWW-Authenticate': challenge },
  });
}
