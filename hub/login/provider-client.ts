import type { Configuration, CustomFetch } from 'openid-client';
import { SvcError } from '../../engine/errors.js';
import { RefusedUrl, requestOutbound, UpstreamFailed, type OutboundPolicy } from '../net/outbound.js';
import { isLoopbackHttp, type ProviderWithSecret } from './identity-providers.js';

// Talking to an identity provider, through openid-client (a certified OpenID relying party):
// OIDC issuers (GitLab is one) by discovery, with PKCE, state, nonce and the ID token checked;
// GitHub (and GitHub Enterprise) by plain OAuth 2.0 with PKCE and state, then its user API for
// who signed in and their verified e-mail addresses. Every request to a provider (discovery, the
// endpoints it names, GitHub's API) goes through the outbound policy (hub/net/outbound.ts): no
// private or loopback address unless SVC_HUB_ALLOW_PRIVATE_URLS=1, no redirect, a deadline and a
// size cap, the address checked again at each request.

/** Who a provider says signed in. */
export interface ExternalIdentity {
  /** The provider's stable id of the account (OIDC `sub`, GitHub's numeric user id). */
  subject: string;
  /** Verified addresses only, preferred first (the primary one). */
  emails: string[];
  name: string | null;
}

export interface AttemptChecks {
  state: string;
  nonce: string;
  verifier: string;
}

const TIMEOUT_S = 10;
const CACHE_MS = 10 * 60_000;
/** Provider documents (discovery, keys, tokens, user info) are small. */
const MAX_BYTES = 1024 * 1024;

/** The provider could not be reached, or answered what is not a sign-in answer: its detail is for the log only. */
export class ProviderUnavailable extends Error {
  override name = 'ProviderUnavailable';
}

const policyFor = (outbound: OutboundPolicy): OutboundPolicy => ({
  ...outbound,
  timeoutMs: Math.min(outbound.timeoutMs, TIMEOUT_S * 1000),
  maxBytes: Math.min(outbound.maxBytes, MAX_BYTES),
});

/** openid-client's fetch, through the outbound policy. */
function outboundFetch(outbound: OutboundPolicy): CustomFetch {
  const policy = policyFor(outbound);
  return async (url, options) => {
    const body =
      options.body === undefined || options.body === null
        ? undefined
        : typeof options.body === 'string'
          ? options.body
          : options.body instanceof URLSearchParams
            ? options.body.toString()
            : Buffer.from(await new Response(options.body).arrayBuffer());
    const r = await requestOutbound(
      url,
      { method: options.method, headers: options.headers, ...(body !== undefined ? { body } : {}) },
      policy,
    );
    const headers = new Headers();
    for (const [k, v] of Object.entries(r.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    return new Response([101, 204, 205, 304].includes(r.status) ? null : r.body, { status: r.status, headers });
  };
}
/** Discovered configurations by provider, until it changes (or for CACHE_MS). */
const configs = new Map<string, { config: Configuration; version: string; at: number }>();

const client = () => import('openid-client');

function githubApi(base: URL): string {
  return base.hostname === 'github.com' ? 'https://api.github.com' : `${base.href.replace(/\/$/, '')}/api/v3`;
}

async function configFor(p: ProviderWithSecret, outbound: OutboundPolicy): Promise<Configuration> {
  const hit = configs.get(p.id);
  if (hit && hit.version === p.updated_at && Date.now() - hit.at < CACHE_MS) return hit.config;
  const oc = await client();
  const base = new URL(p.issuer);
  // Plain http reaches only a provider on this machine, which the outbound policy allows only when private addresses are.
  const execute = isLoopbackHttp(base) ? [oc.allowInsecureRequests] : [];
  const fetcher = outboundFetch(outbound);
  // OAuth and OIDC providers always have both (identity-providers.ts checks it).
  const id = p.client_id ?? '';
  const secret = p.client_secret ?? '';
  let config: Configuration;
  if (p.kind === 'github') {
    const root = base.href.replace(/\/$/, '');
    config = new oc.Configuration(
      { issuer: root, authorization_endpoint: `${root}/login/oauth/authorize`, token_endpoint: `${root}/login/oauth/access_token` },
      id,
      secret,
    );
    for (const f of execute) f(config);
  } else {
    config = await oc.discovery(base, id, secret, undefined, { execute, timeout: TIMEOUT_S, [oc.customFetch]: fetcher });
  }
  config[oc.customFetch] = fetcher;
  config.timeout = TIMEOUT_S;
  configs.set(p.id, { config, version: p.updated_at, at: Date.now() });
  return config;
}

const scopeOf = (p: ProviderWithSecret): string => (p.kind === 'github' ? 'read:user user:email' : 'openid email profile');

/** Where to send the browser: the provider's authorization endpoint with this attempt's checks. */
export async function authorizationUrl(
  p: ProviderWithSecret,
  outbound: OutboundPolicy,
  redirectUri: string,
  checks: AttemptChecks,
): Promise<URL> {
  const oc = await client();
  const config = await configFor(p, outbound).catch((err: unknown) => {
    throw new ProviderUnavailable(failureReason(err), { cause: err });
  });
  const params: Record<string, string> = {
    redirect_uri: redirectUri,
    scope: scopeOf(p),
    state: checks.state,
    code_challenge: await oc.calculatePKCECodeChallenge(checks.verifier),
    code_challenge_method: 'S256',
  };
  if (p.kind !== 'github') params.nonce = checks.nonce;
  return oc.buildAuthorizationUrl(config, params);
}

/** The callback: code for tokens (state, PKCE and, for OIDC, the ID token's signature, iss, aud, exp and nonce checked), then who it is. */
export async function completeLogin(
  p: ProviderWithSecret,
  outbound: OutboundPolicy,
  redirectUri: string,
  callback: URL,
  checks: AttemptChecks,
): Promise<ExternalIdentity> {
  try {
    return await exchange(p, outbound, redirectUri, callback, checks);
  } catch (err) {
    if (upstream(err)) throw new ProviderUnavailable(failureReason(err), { cause: err });
    // The provider's refusal: its error code (a token), never its own words.
    const code =
      (err as { code?: unknown; error?: unknown }).code === 'OAUTH_RESPONSE_BODY_ERROR' ? String((err as { error?: unknown }).error) : '';
    if (code) throw new SvcError('forbidden', `the provider refused the sign-in (${/^[\x21-\x7e]{1,60}$/.test(code) ? code : 'error'})`);
    throw err;
  }
}

// openid-client's codes for an answer that is no answer at all (an error page, a body that is not
// JSON, metadata it cannot use): the caller hears only "unavailable". The others are checks of a
// well-formed answer that failed (a nonce, an issuer, a signature): those are refusals.
const UPSTREAM_CODES = new Set([
  'OAUTH_RESPONSE_IS_NOT_JSON',
  'OAUTH_RESPONSE_IS_NOT_CONFORM',
  'OAUTH_PARSE_ERROR',
  'OAUTH_HTTP_REQUEST_FORBIDDEN',
  'OAUTH_REQUEST_PROTOCOL_FORBIDDEN',
  'OAUTH_MISSING_SERVER_METADATA',
  'OAUTH_INVALID_SERVER_METADATA',
]);

/** Whether an error is the provider's (or the network's) rather than a check of its answer that failed. */
function upstream(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown; name?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e instanceof UpstreamFailed || e instanceof RefusedUrl || e instanceof ProviderUnavailable) return true;
    if (typeof e.code === 'string' && UPSTREAM_CODES.has(e.code)) return true;
    if (e instanceof TypeError && /fetch failed/.test(e.message)) return true;
  }
  return false;
}

async function exchange(
  p: ProviderWithSecret,
  outbound: OutboundPolicy,
  redirectUri: string,
  callback: URL,
  checks: AttemptChecks,
): Promise<ExternalIdentity> {
  const oc = await client();
  const config = await configFor(p, outbound);
  const oidc = p.kind !== 'github';
  const tokens = await oc.authorizationCodeGrant(
    config,
    callback,
    {
      pkceCodeVerifier: checks.verifier,
      expectedState: checks.state,
      ...(oidc ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
    },
    { redirect_uri: redirectUri },
  );
  if (!oidc) return githubIdentity(new URL(p.issuer), tokens.access_token, policyFor(outbound));
  const claims = tokens.claims()!;
  let info: Record<string, unknown> = claims;
  if (typeof claims.email !== 'string') info = { ...(await oc.fetchUserInfo(config, tokens.access_token, claims.sub)), sub: claims.sub };
  const verified = info.email_verified === true || info.email_verified === 'true';
  return {
    subject: claims.sub,
    emails: typeof info.email === 'string' && verified ? [info.email.toLowerCase()] : [],
    name: typeof info.name === 'string' ? info.name : typeof info.preferred_username === 'string' ? info.preferred_username : null,
  };
}

/** An error and its causes in one line: openid-client's own message is general, its cause names the claim or check that failed. */
export function failureReason(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: unknown; cause?: unknown } | undefined, i = 0; e && i < 4; e = e.cause as typeof e, i++) {
    if (typeof e.message === 'string' && e.message && !parts.includes(e.message)) parts.push(e.message);
  }
  return (parts.join(': ') || String(err)).slice(0, 300);
}

async function githubGet(url: string, token: string, policy: OutboundPolicy): Promise<unknown> {
  const r = await requestOutbound(
    url,
    { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json' } },
    policy,
  );
  if (r.status !== 200) throw new ProviderUnavailable(`GitHub answered ${r.status} to ${new URL(url).pathname}`);
  try {
    return JSON.parse(r.body.toString('utf8'));
  } catch {
    throw new ProviderUnavailable(`GitHub answered ${new URL(url).pathname} with what is not JSON`);
  }
}

async function githubIdentity(base: URL, token: string, policy: OutboundPolicy): Promise<ExternalIdentity> {
  const api = githubApi(base);
  const user = (await githubGet(`${api}/user`, token, policy)) as { id?: unknown; login?: unknown; name?: unknown };
  if (typeof user.id !== 'number' && typeof user.id !== 'string')
    throw new SvcError('forbidden', 'GitHub did not say which user signed in');
  const listed = (await githubGet(`${api}/user/emails`, token, policy)) as Array<{
    email?: unknown;
    verified?: unknown;
    primary?: unknown;
  }>;
  const verified = (Array.isArray(listed) ? listed : []).filter((e) => e.verified === true && typeof e.email === 'string');
  verified.sort((a, b) => Number(b.primary === true) - Number(a.primary === true));
  return {
    subject: String(user.id),
    emails: verified.map((e) => (e.email as string).toLowerCase()),
    name: typeof user.name === 'string' ? user.name : typeof user.login === 'string' ? user.login : null,
  };
}
