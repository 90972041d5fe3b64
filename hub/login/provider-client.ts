import type { Configuration } from 'openid-client';
import { isLoopbackHttp, type ProviderWithSecret } from './identity-providers.js';

// Talking to an identity provider, through openid-client (a certified OpenID relying party):
// OIDC issuers (GitLab is one) by discovery, with PKCE, state, nonce and the ID token checked;
// GitHub (and GitHub Enterprise) by plain OAuth 2.0 with PKCE and state, then its user API for
// who signed in and their verified e-mail addresses.

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
const configs = new Map<string, { config: Configuration; at: number }>();

const client = () => import('openid-client');

function githubApi(base: URL): string {
  return base.hostname === 'github.com' ? 'https://api.github.com' : `${base.href.replace(/\/$/, '')}/api/v3`;
}

async function configFor(p: ProviderWithSecret): Promise<Configuration> {
  const key = `${p.id}:${p.updated_at}`;
  const hit = configs.get(key);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.config;
  const oc = await client();
  const base = new URL(p.issuer);
  const execute = isLoopbackHttp(base) ? [oc.allowInsecureRequests] : [];
  // OAuth and OIDC providers always have both (identity-providers.ts checks it).
  const id = p.client_id ?? '';
  const secret = p.client_secret ?? '';
  let config: Configuration;
  if (p.kind === 'github') {
    const root = base.href.replace(/\/$/, '');
    config = new oc.Configuration({ issuer: root, authorization_endpoint: `${root}/login/oauth/authorize`, token_endpoint: `${root}/login/oauth/access_token` }, id, secret);
    for (const f of execute) f(config);
  } else {
    config = await oc.discovery(base, id, secret, undefined, { execute, timeout: TIMEOUT_S });
  }
  config.timeout = TIMEOUT_S;
  configs.set(key, { config, at: Date.now() });
  return config;
}

const scopeOf = (p: ProviderWithSecret): string => (p.kind === 'github' ? 'read:user user:email' : 'openid email profile');

/** Where to send the browser: the provider's authorization endpoint with this attempt's checks. */
export async function authorizationUrl(p: ProviderWithSecret, redirectUri: string, checks: AttemptChecks): Promise<URL> {
  const oc = await client();
  const config = await configFor(p);
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
export async function completeLogin(p: ProviderWithSecret, redirectUri: string, callback: URL, checks: AttemptChecks): Promise<ExternalIdentity> {
  const oc = await client();
  const config = await configFor(p);
  const oidc = p.kind !== 'github';
  const tokens = await oc.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: checks.verifier, expectedState: checks.state, ...(oidc ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}) },
    { redirect_uri: redirectUri },
  );
  if (!oidc) return githubIdentity(new URL(p.issuer), tokens.access_token);
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

async function githubGet(url: string, token: string): Promise<unknown> {
  const r = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'user-agent': 'svc-hub' },
    signal: AbortSignal.timeout(TIMEOUT_S * 1000),
  });
  if (!r.ok) throw new Error(`GitHub answered ${r.status} to ${new URL(url).pathname}`);
  return r.json();
}

async function githubIdentity(base: URL, token: string): Promise<ExternalIdentity> {
  const api = githubApi(base);
  const user = (await githubGet(`${api}/user`, token)) as { id?: unknown; login?: unknown; name?: unknown };
  if (typeof user.id !== 'number' && typeof user.id !== 'string') throw new Error('GitHub did not say which user signed in');
  const listed = (await githubGet(`${api}/user/emails`, token)) as Array<{ email?: unknown; verified?: unknown; primary?: unknown }>;
  const verified = (Array.isArray(listed) ? listed : []).filter((e) => e.verified === true && typeof e.email === 'string');
  verified.sort((a, b) => Number(b.primary === true) - Number(a.primary === true));
  return {
    subject: String(user.id),
    emails: verified.map((e) => (e.email as string).toLowerCase()),
    name: typeof user.name === 'string' ? user.name : typeof user.login === 'string' ? user.login : null,
  };
}
