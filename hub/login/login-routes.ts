import type Router from '@koa/router';
import type { ParameterizedContext } from 'koa';
import { randomBytes } from 'node:crypto';
import { hashKey } from '../access/tokens.js';
import type { Database, HubState, Org } from '../contracts.js';
import type { HubConfig } from '../config.js';
import { hubOrigin } from '../http/hub-origin.js';
import { cookieOptions, esc, htmlPage, readForm, sameOrigin } from './browser-kit.js';
import type { AuditWriter } from '../audit/audit-log.js';
import { appendAudit } from '../audit/audit-log.js';
import { ident } from '../data/sql.js';
import { findOrg } from '../data/organizations.js';
import type { FailedAuthGuard } from '../limits/failed-auth.js';
import { validBody } from '../openapi/spec.js';
import { HubProblem, badRequest, notFoundProblem, unauthorized } from '../http/problem.js';
import { requireAdmin, type Ctx } from '../http/route-kit.js';
import { asLogger, type HubLogger } from '../observe/logger.js';
import {
  createProvider,
  deleteProvider,
  getProvider,
  listProviders,
  providerByName,
  updateProvider,
  type IdentityProvider,
  type ProviderInput,
  type ProviderWithSecret,
} from './identity-providers.js';
import { authorizationUrl, completeLogin, failureReason, ProviderUnavailable, type ExternalIdentity } from './provider-client.js';
import { completeSaml, samlLoginUrl, samlMetadata, type SamlEndpoints } from './saml-client.js';
import { endGrantsOfSession } from './grant-routes.js';
import { createSession, endSession, mintToken, sessionFromCookie, SESSION_COOKIE, SESSION_HOURS } from './login-sessions.js';
import { signInUser, SignInRefused } from './sign-in.js';
import { takeSignInStart } from '../limits/sign-in-starts.js';
import { inspectLoginLink, linkPath, useLoginLink } from './login-links.js';
import { inspectInvitation, redeemInvitation } from '../access/identity.js';
import { html, type Html } from '../pages/html.js';
import { renderPage, type PageCtx } from '../pages/page-kit.js';

// Signing in through an organization's identity providers, for browsers:
//   GET  /auth/<org>/<provider>/login[?return_to=/path]  redirects to the provider
//   GET  /auth/<org>/<provider>/callback                 the provider sends the browser back here
//   POST /auth/<org>/<provider>/acs                      (SAML) the IdP posts its response here
//   GET  /auth/<org>/<provider>/metadata                 (SAML) our SP metadata; its URL is our entity ID
//   GET  /auth/session                                   who this browser is signed in as
//   POST /auth/token                                     a short-lived hub token from the session
//   POST /auth/logout                                    ends the session and its tokens
//   GET  /sign-in/link/<token>, POST (its button)        a single-use sign-in link (login-links.ts)
//   GET  /invite/<token>, POST (its button)              an invitation accepted in a browser: a
//                                                        session, and the person's first key shown once
// The attempt's state travels both in the redirect and in a cookie on the browser that started
// it (so nobody can hand a victim a callback for the attacker's account); its PKCE verifier and
// nonce stay in the database, used once. A SAML sign-in is bound the same way: its RelayState in a
// cookie of its own, and the AuthnRequest's ID with the attempt, so the IdP's answer is taken only
// from the browser that started the sign-in, and only as the answer to that sign-in's request.
// Anonymous starts are limited per client address, and what they store expires and is swept.
// Refusals reach a browser (it asks for HTML) as a page, API clients as a problem document; a
// provider that cannot be reached is "unavailable", its detail in the log only.
// And the admin routes that configure the providers.

const ATTEMPT_COOKIE = 'svc_login';
const SAML_COOKIE = 'svc_saml';
const ATTEMPT_MINUTES = 10;
/** Unfinished sign-ins an organization keeps at most: beyond, new starts wait for old ones to expire. */
const MAX_OPEN_ATTEMPTS = 10_000;
const DEFAULT_RETURN = '/auth/session';

type AnyCtx = ParameterizedContext;

/** What the browser-facing routes (sign-in here, the OAuth server in oauth-server.ts) use. */
export interface LoginDeps {
  db: Database;
  config: HubConfig;
  audit: AuditWriter;
  failedAuth: FailedAuthGuard;
  /** Where the detail of an unreachable provider goes (standard error by default). */
  log?: HubLogger;
}

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '[::1]'];

/**
 * The cookie binding a SAML sign-in to its browser. The IdP answers with a cross-site POST,
 * which carries only SameSite=None cookies, and those must be Secure. Over https that is what is
 * set, under the __Host- prefix (no sibling subdomain can plant one). Over plain http on loopback
 * (tests, a developer's machine) browsers count the origin as secure, so the same Secure,
 * SameSite=None cookie is set and sent there (Chromium and Firefox do). Over plain http anywhere
 * else no Secure cookie can be set: the cookie goes without a SameSite attribute, which Chromium
 * treats as Lax yet still sends on a top-level POST within two minutes of setting it.
 */
function samlCookie(ctx: AnyCtx, config: HubConfig, maxAgeMs: number) {
  const base = cookieOptions(ctx, config, '/', maxAgeMs);
  if (base.secure || LOOPBACK_HOSTS.includes(new URL(hubOrigin(ctx, config)).hostname)) {
    ctx.cookies.secure = true;
    return { name: `__Host-${SAML_COOKIE}`, options: { ...base, secure: true, sameSite: 'none' as const } };
  }
  return { name: SAML_COOKIE, options: { ...base, path: '/auth/', sameSite: false as const } };
}

/** Browsers (they ask for HTML before JSON) get a refusal as a page; API clients get the problem document. */
function forBrowsers(handler: (ctx: AnyCtx) => Promise<void>) {
  return async (ctx: AnyCtx): Promise<void> => {
    try {
      await handler(ctx);
    } catch (err) {
      if (!(err instanceof HubProblem) || ctx.accepts('json', 'html') !== 'html') throw err;
      for (const [k, v] of Object.entries(err.headers ?? {})) if (k.toLowerCase() !== 'www-authenticate') ctx.set(k, v);
      ctx.status = err.status;
      const again = ctx.params?.org ? `/sign-in?org=${encodeURIComponent(String(ctx.params.org))}` : '/sign-in';
      htmlPage(
        ctx,
        err.status === 401 ? 'Sign-in refused' : err.title,
        `<p role="alert">${esc(err.message)}</p>\n<p><a href="${esc(again)}">Sign in again</a></p>`,
      );
    }
  };
}

/** Only a path on this hub: never another origin (//evil, /\evil), never control characters. */
export function checkReturnTo(raw: string | undefined): string {
  if (raw === undefined || raw === '') return DEFAULT_RETURN;
  if (!/^\/(?![/\\])[\x21-\x7e]{0,2000}$/.test(raw) || raw.includes('\\'))
    throw badRequest('return_to must be a path on this hub, such as /me/', ['return_to: not a local path']);
  return raw;
}

const redirectUri = (ctx: AnyCtx, config: HubConfig, org: Org, name: string): string =>
  `${hubOrigin(ctx, config)}/auth/${org.slug}/${name}/callback`;
const samlEndpoints = (ctx: AnyCtx, config: HubConfig, org: Org, name: string): SamlEndpoints => {
  const base = `${hubOrigin(ctx, config)}/auth/${org.slug}/${name}`;
  return { entityId: `${base}/metadata`, acs: `${base}/acs` };
};

async function orgAndProvider(db: Database, config: HubConfig, slug: string, name: string) {
  const org = await findOrg(db, slug).catch(() => null);
  const provider = org ? await providerByName(db, org, name, config.secrets) : null;
  if (!org || !provider) throw notFoundProblem(`no identity provider "${name}" in organization "${slug}"`);
  return { org, provider };
}

export function registerLoginRoutes(router: Router, deps: LoginDeps): void {
  const { db, config } = deps;

  const log = asLogger(deps.log);
  /** The anonymous caller hears that the provider is unavailable; the reason goes to the log. */
  const unavailable = (org: Org, provider: ProviderWithSecret, err: unknown): HubProblem => {
    log.warn(
      { event: 'sign_in.provider_failed', org: org.slug, provider: provider.name, reason: failureReason(err) },
      `sign-in through ${org.slug}/${provider.name} failed at the provider: ${failureReason(err)}`,
    );
    return new HubProblem(
      502,
      'provider-unavailable',
      'Sign-in unavailable',
      `sign-in through ${provider.name} is unavailable; try again later, or tell an admin of ${org.slug}`,
    );
  };

  router.get(
    '/auth/:org/:provider/login',
    forBrowsers(async (ctx) => {
      const returnTo = checkReturnTo(typeof ctx.query.return_to === 'string' ? ctx.query.return_to : undefined);
      const { org, provider } = await orgAndProvider(db, config, ctx.params.org!, ctx.params.provider!);
      await takeSignInStart(db, ctx.ip);
      const s = ident(org.schema);
      // Abandoned sign-ins leave their attempt behind: each new one clears the expired.
      await db.query(`DELETE FROM ${s}.login_attempts WHERE expires_at < now()`);
      const open = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${s}.login_attempts LIMIT ${MAX_OPEN_ATTEMPTS}) a`,
      );
      if (Number(open.rows[0]?.n ?? 0) >= MAX_OPEN_ATTEMPTS) {
        throw new HubProblem(
          503,
          'busy',
          'Too many sign-ins under way',
          `too many sign-ins to ${org.slug} are under way; retry in a minute`,
          { headers: { 'Retry-After': '60' } },
        );
      }
      const checks = {
        state: randomBytes(32).toString('base64url'),
        nonce: randomBytes(32).toString('base64url'),
        verifier: randomBytes(48).toString('base64url'),
      };
      const saml = provider.kind === 'saml';
      let target: string;
      let samlRequestId: string | null = null;
      try {
        if (saml) {
          const made = await samlLoginUrl(db, org, provider, samlEndpoints(ctx, config, org, provider.name), checks.state);
          target = made.url;
          samlRequestId = made.requestId;
        } else {
          target = (await authorizationUrl(provider, config.outbound, redirectUri(ctx, config, org, provider.name), checks)).href;
        }
      } catch (err) {
        throw unavailable(org, provider, err);
      }
      await db.query(
        `INSERT INTO ${s}.login_attempts (state_hash, provider_id, code_verifier, nonce, return_to, expires_at, saml_request_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          hashKey(checks.state),
          provider.id,
          checks.verifier,
          checks.nonce,
          returnTo,
          new Date(Date.now() + ATTEMPT_MINUTES * 60_000),
          samlRequestId,
        ],
      );
      if (saml) {
        const c = samlCookie(ctx, config, ATTEMPT_MINUTES * 60_000);
        ctx.cookies.set(c.name, checks.state, c.options);
      } else ctx.cookies.set(ATTEMPT_COOKIE, checks.state, cookieOptions(ctx, config, '/auth/', ATTEMPT_MINUTES * 60_000));
      ctx.redirect(target);
    }),
  );

  /** The provider's answer, wherever it came in: refusals audited and counted, success a session. */
  async function answer(
    ctx: AnyCtx,
    slug: string,
    name: string,
    take: (
      org: Org,
      provider: ProviderWithSecret,
      refuse: (reason: string) => Promise<never>,
    ) => Promise<{ who: ExternalIdentity; returnTo: string }>,
  ): Promise<void> {
    deps.failedAuth.check(ctx.ip, false);
    const { org, provider } = await orgAndProvider(db, config, slug, name);
    const refuse = async (reason: string): Promise<never> => {
      deps.audit.record(org, {
        at: new Date().toISOString(),
        actor: 'anonymous',
        token_id: null,
        action: 'auth.login',
        resource: `identity_provider:${provider.id}`,
        outcome: 401,
        details: { reason },
      });
      await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      throw unauthorized(`sign-in through ${provider.name} failed: ${reason}`);
    };
    let taken: { who: ExternalIdentity; returnTo: string };
    try {
      taken = await take(org, provider, refuse);
    } catch (err) {
      if (err instanceof ProviderUnavailable) throw unavailable(org, provider, err);
      throw err;
    }
    const { who, returnTo } = taken;
    let signed;
    try {
      signed = await db.transaction(async (q) => {
        const user = await signInUser(q, org, provider, who);
        const made = await createSession(q, org, user.userId, { providerId: provider.id });
        await appendAudit(q, org, config.auditKey, [
          {
            at: new Date().toISOString(),
            actor: user.userName,
            token_id: made.session.id,
            action: 'auth.login',
            resource: `user:${user.userId}`,
            outcome: 200,
            details: { provider: provider.name, created: user.created },
          },
        ]);
        return made;
      });
    } catch (err) {
      if (err instanceof SignInRefused) return refuse(err.message);
      throw err;
    }
    ctx.cookies.set(SESSION_COOKIE, signed.cookie, cookieOptions(ctx, config, '/', SESSION_HOURS * 3600_000));
    ctx.redirect(returnTo);
  }

  /** The attempt a state names, spent; null when unknown, used, expired or another provider's. */
  const spend = async (org: Org, provider: ProviderWithSecret, state: string) =>
    (
      await db.query<{ provider_id: string; code_verifier: string; nonce: string; return_to: string; saml_request_id: string | null }>(
        `DELETE FROM ${ident(org.schema)}.login_attempts WHERE state_hash = $1 AND expires_at > now() RETURNING provider_id, code_verifier, nonce, return_to, saml_request_id`,
        [hashKey(state)],
      )
    ).rows.find((a) => a.provider_id === provider.id) ?? null;

  router.get(
    '/auth/:org/:provider/callback',
    forBrowsers((ctx) =>
      answer(ctx, ctx.params.org!, ctx.params.provider!, async (org, provider, refuse) => {
        const state = typeof ctx.query.state === 'string' ? ctx.query.state : '';
        const mine = ctx.cookies.get(ATTEMPT_COOKIE);
        ctx.cookies.set(ATTEMPT_COOKIE, null, cookieOptions(ctx, config, '/auth/', 0));
        if (provider.kind === 'saml') return refuse('a SAML provider answers at its ACS, not here');
        if (!state || !mine || state !== mine)
          return refuse('this sign-in was not started by this browser (state does not match); start again');
        const attempt = await spend(org, provider, state);
        if (!attempt) return refuse('this sign-in is unknown, used already or expired; start again');
        if (typeof ctx.query.error === 'string') return refuse(`the provider answered ${ctx.query.error.slice(0, 100)}`);
        const uri = redirectUri(ctx, config, org, provider.name);
        try {
          return {
            who: await completeLogin(provider, config.outbound, uri, new URL(`${uri}?${ctx.querystring}`), {
              state,
              nonce: attempt.nonce,
              verifier: attempt.code_verifier,
            }),
            returnTo: attempt.return_to,
          };
        } catch (err) {
          if (err instanceof ProviderUnavailable) throw err;
          return refuse(failureReason(err));
        }
      }),
    ),
  );

  router.post(
    '/auth/:org/:provider/acs',
    forBrowsers((ctx) =>
      answer(ctx, ctx.params.org!, ctx.params.provider!, async (org, provider, refuse) => {
        if (provider.kind !== 'saml') return refuse(`${provider.name} is not a SAML provider`);
        const form = await readForm(ctx, 1024 * 1024).catch(() => new URLSearchParams());
        const response = form.get('SAMLResponse');
        if (!response) return refuse('no SAMLResponse was posted');
        // Login CSRF: a response someone obtained for their own account, posted from elsewhere by
        // another person's browser, finds no cookie there (or another sign-in's, which it leaves be).
        const cookie = samlCookie(ctx, config, 0);
        const mine = ctx.cookies.get(cookie.name);
        const relay = form.get('RelayState') ?? '';
        if (!mine || relay !== mine)
          return refuse("this SAML response was not asked for by this browser (unsolicited, or another sign-in's); start again");
        ctx.cookies.set(cookie.name, null, cookie.options);
        const attempt = await spend(org, provider, relay);
        if (!attempt || !attempt.saml_request_id)
          return refuse('this sign-in is unknown, used already or expired (RelayState); start again');
        try {
          return {
            who: await completeSaml(db, org, provider, samlEndpoints(ctx, config, org, provider.name), response, attempt.saml_request_id),
            returnTo: attempt.return_to,
          };
        } catch (err) {
          return refuse(failureReason(err));
        }
      }),
    ),
  );

  router.get('/auth/:org/:provider/metadata', async (ctx) => {
    const { org, provider } = await orgAndProvider(db, config, ctx.params.org!, ctx.params.provider!);
    if (provider.kind !== 'saml') throw notFoundProblem(`${provider.name} is not a SAML provider: it has no SP metadata`);
    ctx.type = 'application/samlmetadata+xml';
    ctx.body = samlMetadata(provider, samlEndpoints(ctx, config, org, provider.name));
  });

  const session = async (ctx: AnyCtx) => {
    const s = await sessionFromCookie(db, ctx.cookies.get(SESSION_COOKIE));
    if (!s) throw unauthorized('not signed in: start at /auth/<organization>/<provider>/login');
    return s;
  };

  router.get('/auth/session', async (ctx) => {
    const s = await session(ctx);
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      user: { id: s.userId, name: s.userName },
      org: { id: s.org.id, slug: s.org.slug },
      role: s.role,
      expires_at: s.expiresAt.toISOString(),
    };
  });

  router.post('/auth/token', async (ctx) => {
    sameOrigin(ctx, config);
    const s = await session(ctx);
    const { token, expiresAt } = await mintToken(db, config.jwt, s);
    ctx.set('cache-control', 'no-store');
    ctx.body = {
      token,
      token_type: 'Bearer',
      expires_in: Math.round((expiresAt.getTime() - Date.now()) / 1000),
      expires_at: expiresAt.toISOString(),
    };
  });

  /** A form that signs a browser in must come from our own page (login CSRF: no other site posts someone's link). */
  const ownForm = (ctx: AnyCtx) => {
    sameOrigin(ctx, config);
    if (ctx.get('sec-fetch-site') === 'cross-site')
      throw new HubProblem(403, 'forbidden', 'Forbidden', 'a form from another site may not sign in here');
  };
  const page = (ctx: AnyCtx, title: string, body: Html, status = 200) =>
    renderPage(ctx as unknown as PageCtx, { title, section: 'me', body, status });
  const refusedLink = (ctx: AnyCtx, reason: string, org: Org | null) =>
    page(
      ctx,
      'Sign-in link refused',
      html`<p class="error" role="alert">${reason}.</p><p>Ask an admin of ${org ? org.slug : 'your organization'} for a new link, or run <code>svc hub login-link --org ${org ? org.slug : '<organization>'}</code> on the hub's machine.</p><p><a href="/sign-in${org ? `?org=${encodeURIComponent(org.slug)}` : ''}">Other ways to sign in</a></p>`,
      reason.startsWith('this sign-in link is not known') ? 404 : 410,
    );
  const landing = (role: string) => (role === 'admin' ? '/admin/' : '/me/');

  router.get('/sign-in/link/:token', async (ctx) => {
    deps.failedAuth.check(ctx.ip, false);
    const token = ctx.params.token!;
    const state = await inspectLoginLink(db, token);
    if (!state.ok) {
      if (!state.org) await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      return refusedLink(ctx, state.reason, state.org);
    }
    page(
      ctx,
      `Sign in to ${state.org.slug}`,
      html`<section class="card"><p>This link signs this browser in as <strong>${state.user.name}</strong> (${state.user.role}) at <strong>${state.org.slug}</strong>. It works once.</p>
<form method="post" action="${linkPath(token)}"><button type="submit">Sign in as ${state.user.name}</button></form></section>`,
    );
  });

  router.post('/sign-in/link/:token', async (ctx) => {
    deps.failedAuth.check(ctx.ip, false);
    ownForm(ctx);
    const used = await db.transaction(async (q) => {
      const r = await useLoginLink(q, ctx.params.token!);
      if (r.ok) {
        await appendAudit(q, r.org, config.auditKey, [
          {
            at: new Date().toISOString(),
            actor: r.user.name,
            token_id: r.session.id,
            action: 'auth.login',
            resource: `user:${r.user.id}`,
            outcome: 200,
            details: { via: 'sign-in link', link_id: r.linkId, link_created_by: r.createdBy },
          },
        ]);
      }
      return r;
    });
    if (!used.ok) {
      if (!used.org) await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      return refusedLink(ctx, used.reason, used.org);
    }
    ctx.cookies.set(SESSION_COOKIE, used.cookie, cookieOptions(ctx, config, '/', SESSION_HOURS * 3600_000));
    ctx.status = 303;
    ctx.redirect(landing(used.user.role));
  });

  const refusedInvitation = (ctx: AnyCtx) =>
    page(
      ctx,
      'Invitation refused',
      html`<p class="error" role="alert">This invitation is unknown, already used or expired.</p><p>Ask the admin who invited you for a new one.</p><p><a href="/sign-in">Sign in</a></p>`,
      410,
    );

  router.get('/invite/:token', async (ctx) => {
    deps.failedAuth.check(ctx.ip, false);
    const token = ctx.params.token!;
    const inv = await inspectInvitation(db, token);
    if (!inv) {
      await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      return refusedInvitation(ctx);
    }
    page(
      ctx,
      `Join ${inv.org.slug}`,
      html`<section class="card"><p>You are invited to the team memory of <strong>${inv.org.slug}</strong> as <strong>${inv.user.name}</strong> (${inv.user.role}).</p>
<p>Accepting signs this browser in and creates your first API key, shown once, for the <code>svc</code> command and your agents.</p>
<form method="post" action="/invite/${token}"><button type="submit">Accept and sign in</button></form></section>`,
    );
  });

  router.post('/invite/:token', async (ctx) => {
    deps.failedAuth.check(ctx.ip, false);
    ownForm(ctx);
    const done = await db.transaction(async (q) => {
      const r = await redeemInvitation(q, ctx.params.token!, 'first key (invitation)');
      if (!r) return null;
      const made = await createSession(q, r.org, r.user.id);
      const at = new Date().toISOString();
      await appendAudit(q, r.org, config.auditKey, [
        {
          at,
          actor: r.user.name,
          token_id: r.info.id,
          action: 'invitation.accept',
          resource: `api_key:${r.info.id}`,
          outcome: 201,
          details: { invitation_id: r.invitationId, user_id: r.user.id, via: 'browser' },
        },
        {
          at,
          actor: r.user.name,
          token_id: made.session.id,
          action: 'auth.login',
          resource: `user:${r.user.id}`,
          outcome: 200,
          details: { via: 'invitation', invitation_id: r.invitationId },
        },
      ]);
      return { ...r, ...made };
    });
    if (!done) {
      await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      return refusedInvitation(ctx);
    }
    ctx.cookies.set(SESSION_COOKIE, done.cookie, cookieOptions(ctx, config, '/', SESSION_HOURS * 3600_000));
    page(
      ctx,
      `Welcome to ${done.org.slug}, ${done.user.name}`,
      html`<p>This browser is signed in. Your first API key, for the <code>svc</code> command and your agents:</p>
<div class="warning" role="status">Copy your key now: it is shown only this once. The hub keeps only its hash.</div>
<p class="secret" id="new-secret">${done.key}</p>
<p><a href="/me/connect">Connect your agent with it</a> · <a href="${landing(done.user.role)}">Continue</a></p>`,
      201,
    );
  });

  router.post('/auth/logout', async (ctx) => {
    sameOrigin(ctx, config);
    await signOut(ctx, deps);
    ctx.status = 204;
  });
}

/** Ends the browser's session (audited) and clears its cookie; the pages' sign-out does the same. */
export async function signOut(ctx: AnyCtx, deps: Pick<LoginDeps, 'db' | 'config' | 'audit'>): Promise<void> {
  const s = await sessionFromCookie(deps.db, ctx.cookies.get(SESSION_COOKIE));
  if (s) {
    await endSession(deps.db, s);
    await endGrantsOfSession(deps.db, s.org, s.id);
    deps.audit.record(s.org, {
      at: new Date().toISOString(),
      actor: s.userName,
      token_id: s.id,
      action: 'auth.logout',
      resource: `user:${s.userId}`,
      outcome: 204,
      details: {},
    });
  }
  ctx.cookies.set(SESSION_COOKIE, null, cookieOptions(ctx, deps.config, '/', 0));
}

/** The admin routes under /api/v1/admin/identity-providers. */
export function registerProviderAdminRoutes(router: Router<HubState>, deps: { config: HubConfig }): void {
  const view = (ctx: Ctx, p: IdentityProvider) => ({
    ...p,
    login_url: `${hubOrigin(ctx, deps.config)}/auth/${ctx.state.principal.org.slug}/${p.name}/login`,
    redirect_uri:
      p.kind === 'saml'
        ? samlEndpoints(ctx, deps.config, ctx.state.principal.org, p.name).acs
        : redirectUri(ctx, deps.config, ctx.state.principal.org, p.name),
    metadata_url: p.kind === 'saml' ? samlEndpoints(ctx, deps.config, ctx.state.principal.org, p.name).entityId : null,
  });
  router.get('/admin/identity-providers', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    ctx.body = { items: (await listProviders(ctx.state.db, ctx.state.principal.org)).map((p) => view(ctx, p)) };
  });
  router.post('/admin/identity-providers', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const body = await validBody<ProviderInput>('IdentityProviderNew', ctx.request.body);
    ctx.status = 201;
    ctx.body = view(ctx, await createProvider(ctx.state.db, ctx.state.principal.org, body, deps.config.outbound, deps.config.secrets));
  });
  router.get('/admin/identity-providers/:id', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const p = await getProvider(ctx.state.db, ctx.state.principal.org, ctx.params.id!);
    if (!p) throw notFoundProblem(`no identity provider ${ctx.params.id}`);
    ctx.body = view(ctx, p);
  });
  router.patch('/admin/identity-providers/:id', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const body = await validBody<ProviderInput>('IdentityProviderChange', ctx.request.body);
    ctx.body = view(
      ctx,
      await updateProvider(ctx.state.db, ctx.state.principal.org, ctx.params.id!, body, deps.config.outbound, deps.config.secrets),
    );
  });
  router.delete('/admin/identity-providers/:id', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    await deleteProvider(ctx.state.db, ctx.state.principal.org, ctx.params.id!);
    ctx.status = 204;
  });
}
