import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { CookieBrowser } from './support/cookie-browser.js';
import { type OidcIdp } from './support/oidc-idp.js';
import { startCorpIdp } from './support/corp-idp.js';

// An MCP client that logs in by itself: the SDK's own OAuth client against /mcp, with no key
// configured. The person's part (signing in at their organization's IdP, oidc-provider here, and
// consenting) is played by a browser that follows redirects and keeps cookies.

const REDIRECT = 'http://127.0.0.1:33418/callback';

class MemoryOAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get redirectUrl(): string {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'svc test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const field = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

describe.each(DATABASES)('MCP clients that log in by themselves (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: OidcIdp;

  beforeAll(async () => {
    // The IdP runs on loopback, over http.
    hub = await startTestHub(kind, { allowPrivateUrls: true });
    acme = await hub.newOrg('acme');
    ({ idp } = await startCorpIdp(hub, acme, { default_role: 'editor' }));
    const learned = await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Release branches are cut every second Thursday', scope: 'org:acme' },
    });
    expect(learned.status, learned.text).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await idp?.close();
    await hub?.close();
  });

  /** The person's part: from the authorization URL to the code at the client's redirect URI. */
  async function personConsents(browser: CookieBrowser, authorizationUrl: URL, clientName = 'svc test client'): Promise<URL> {
    const atClient = (u: URL) => u.href.startsWith(REDIRECT);
    const signIn = await browser.follow(authorizationUrl.href, atClient);
    expect(signIn.status).toBe(200);
    expect(signIn.text).toContain('Organization');
    const consent = await browser.follow(`${hub.url}/oauth/authorize/consent?request=${field(signIn.text, 'request')}&org=acme`, atClient);
    expect(consent.status).toBe(200);
    expect(consent.text).toContain(
      `<strong>${clientName}</strong> (it returns to <strong>127.0.0.1:33418</strong>) asks to connect to svc as <strong>alice</strong>, an editor of <strong>acme</strong>`,
    );
    expect(consent.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    // "Use another organization" asks for one, signed in or not.
    const other = await browser.follow(`${hub.url}/oauth/authorize/consent?request=${field(consent.text, 'request')}&org=`, atClient);
    expect(other.text).toContain('Organization');
    expect(other.text).not.toContain('asks to connect');
    const form = new URLSearchParams({ request: field(consent.text, 'request'), csrf: field(consent.text, 'csrf'), decision: 'allow' });
    const decided = await browser.request('POST', `${hub.url}/oauth/authorize/decide`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: hub.url },
      body: form.toString(),
    });
    expect(decided.status, decided.text).toBe(302);
    return new URL(decided.headers.get('location')!);
  }

  it('goes from 401 to a working svc_recall with no key configured: discovery, registration, sign-in, consent, token', async () => {
    idp.next = { sub: 'alice-1', email: 'alice@acme.example', email_verified: true };
    const provider = new MemoryOAuthProvider();
    const url = new URL(`${hub.url}/mcp`);
    const first = new Client({ name: 'oauth-test', version: '1.0.0' });
    await expect(first.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))).rejects.toBeInstanceOf(
      UnauthorizedError,
    );
    expect(provider.info?.client_id).toBeTruthy();
    expect(provider.authorizationUrl!.searchParams.get('resource')).toBe(`${hub.url}/mcp`);
    expect(provider.authorizationUrl!.searchParams.get('code_challenge_method')).toBe('S256');

    const back = await personConsents(new CookieBrowser(), provider.authorizationUrl!);
    expect(back.searchParams.get('iss')).toBe(hub.url);
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await transport.finishAuth(back.searchParams.get('code')!);
    expect(provider.saved).toMatchObject({ token_type: 'Bearer' });
    expect(provider.saved!.refresh_token).toBeTruthy();

    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    const result = (await client.callTool({ name: 'svc_recall', arguments: { query: 'when are release branches cut' } })) as {
      content: Array<{ text: string }>;
    };
    expect(result.content[0]!.text).toContain('Release branches are cut every second Thursday');
    await client.close();

    // The token is for the MCP resource (RFC 8707): REST refuses it.
    const me = await hub.request('GET', '/me', { token: provider.saved!.access_token });
    expect(me.status).toBe(401);
  });

  it('answers a tokenless MCP request with the resource metadata, and serves both metadata documents', async () => {
    const r = await fetch(`${hub.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toContain(`resource_metadata="${hub.url}/.well-known/oauth-protected-resource/mcp"`);
    const prm = await (await fetch(`${hub.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${hub.url}/mcp`, authorization_servers: [hub.url] });
    const as = await (await fetch(`${hub.url}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject({
      issuer: hub.url,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      registration_endpoint: `${hub.url}/oauth/register`,
    });
  });

  it('refuses forged consent, a replayed code, a wrong verifier, a spent refresh token, and unregistered redirects', async () => {
    idp.next = { sub: 'alice-1', email: 'alice@acme.example', email_verified: true };
    const reg = await fetch(`${hub.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'manual' }),
    });
    expect(reg.status).toBe(201);
    const clientId = ((await reg.json()) as { client_id: string }).client_id;
    const verifier = 'v'.repeat(50);
    const challenge = (await import('node:crypto')).createHash('sha256').update(verifier).digest('base64url');
    const authorize = (redirect = REDIRECT) =>
      new URL(
        `${hub.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 's1' })}`,
      );

    // An unregistered redirect is never followed: the error stays on the hub.
    const stray = await new CookieBrowser().request('GET', authorize('https://evil.example/cb').href);
    expect(stray.status).toBe(400);
    expect(stray.headers.get('location')).toBeNull();
    for (const uris of [['http://evil.example/cb'], ['javascript:alert(1)'], []]) {
      const bad = await fetch(`${hub.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: uris }),
      });
      expect(bad.status, JSON.stringify(uris)).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toBe('invalid_redirect_uri');
    }

    // The consent form from another browser (no anti-forgery cookie there), or with another token.
    const browser = new CookieBrowser();
    const signIn = await browser.follow(authorize().href);
    const consent = await browser.follow(`${hub.url}/oauth/authorize/consent?request=${field(signIn.text, 'request')}&org=acme`);
    const post = (b: CookieBrowser, csrf: string) =>
      b.request('POST', `${hub.url}/oauth/authorize/decide`, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ request: field(consent.text, 'request'), csrf, decision: 'allow' }).toString(),
      });
    expect((await post(new CookieBrowser(), field(consent.text, 'csrf'))).status).toBe(403);
    expect((await post(browser, 'x'.repeat(32))).status).toBe(403);
    const allowed = await post(browser, field(consent.text, 'csrf'));
    expect(allowed.status).toBe(302);
    const code = new URL(allowed.headers.get('location')!).searchParams.get('code')!;

    const token = (form: Record<string, string>) =>
      fetch(`${hub.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: clientId, ...form }).toString(),
      });
    const wrong = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: 'w'.repeat(50) });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' });
    // The code was spent by the failed try as well: a code is tried once.
    const replay = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });

    // A fresh code, exchanged; then the refresh token works once.
    const again = await personConsentsWith(clientId, challenge);
    const got = (await (
      await token({ grant_type: 'authorization_code', code: again, redirect_uri: REDIRECT, code_verifier: verifier })
    ).json()) as OAuthTokens;
    expect(got.access_token).toBeTruthy();
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: got.refresh_token! });
    expect(refreshed.status).toBe(200);
    const spent = await token({ grant_type: 'refresh_token', refresh_token: got.refresh_token! });
    expect(await spent.json()).toMatchObject({ error: 'invalid_grant' });
    // The spent one used again ended the whole grant (RFC 9700): the new refresh token is dead too.
    const next = (await refreshed.json()) as OAuthTokens;
    expect(await (await token({ grant_type: 'refresh_token', refresh_token: next.refresh_token! })).json()).toMatchObject({
      error: 'invalid_grant',
    });
  });

  async function personConsentsWith(clientId: string, challenge: string): Promise<string> {
    const url = new URL(
      `${hub.url}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256' })}`,
    );
    const back = await personConsents(new CookieBrowser(), url, 'manual');
    return back.searchParams.get('code')!;
  }
});
