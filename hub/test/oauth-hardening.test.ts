import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request as httpRequest } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { CookieBrowser } from './support/cookie-browser.js';
import { type OidcIdp } from './support/oidc-idp.js';
import { CONTROL_SCHEMA } from '../data/sql.js';
import { queryAudit } from '../audit/audit-log.js';
import { formField as field, OAuthClient, REDIRECT, type Tokens } from './support/oauth-client.js';
import { startCorpIdp } from './support/corp-idp.js';

// The OAuth server's audit findings (issue 25): tokens held to their audience, a consent page that
// says what is granted, grants listed and revoked (and ended by sign-out, DELETE /me/token and
// provider removal), anonymous registration and authorization bounded per address and swept, no
// open redirect, refresh validated before rotation and reuse ending the grant, no-store answers.

/** A request from another loopback address (127.0.0.x): limits are per client address. */
function fromAddress(
  local: string,
  method: string,
  href: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      href,
      { method, localAddress: local, headers: { ...headers, ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString() }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(DATABASES)('the hub OAuth server, hardened (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: OidcIdp;
  let providerId: string;

  beforeAll(async () => {
    // The IdP runs on loopback, over http.
    hub = await startTestHub(kind, { allowPrivateUrls: true });
    acme = await hub.newOrg('acme');
    ({ idp, providerId } = await startCorpIdp(hub, acme, { default_role: 'editor' }));
  }, 60_000);
  afterAll(async () => {
    await idp?.close();
    await hub?.close();
  });

  const register = (name = 'hardening client') => OAuthClient.register(hub.url, name);
  const noClientToken = (form: Record<string, string>) =>
    fetch(`${hub.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    });

  /** Whether MCP takes the token: a session and a tool list. */
  async function mcpWorks(bearer: string): Promise<boolean> {
    const client = new Client({ name: 'hardening', version: '1.0.0' });
    try {
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${hub.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }),
      );
      const tools = await client.listTools();
      return tools.tools.length > 0;
    } catch {
      return false;
    } finally {
      await client.close().catch(() => undefined);
    }
  }

  /** A browser session's own hub token (what the portal uses). */
  const browserToken = async (browser: CookieBrowser): Promise<string> =>
    JSON.parse((await browser.request('POST', `${hub.url}/auth/token`, { headers: { origin: hub.url } })).text).token;

  it('holds an MCP access token to MCP: refused on REST, the admin routes, SCIM and the pages; API keys and browser tokens unchanged', async () => {
    idp.next = { sub: 'ada-1', email: 'ada@acme.example', email_verified: true };
    // Ada is an admin: what an MCP client of hers could do before is the finding.
    const browser = new CookieBrowser();
    const client = await register();
    const t = await client.grant(browser, 'acme');
    const ada = (await hub.request('GET', '/admin/users', { token: acme.adminKey })).body.items.find(
      (u: { name: string }) => u.name === 'ada',
    );
    expect((await hub.request('PATCH', `/admin/users/${ada.id}`, { token: acme.adminKey, body: { role: 'admin' } })).status).toBe(200);

    expect(await mcpWorks(t.access_token)).toBe(true);
    for (const [method, path, body] of [
      ['GET', '/me'],
      ['POST', '/admin/scim-tokens', { name: 'stolen' }],
      ['POST', '/admin/invitations', { user_id: ada.id }],
      ['POST', '/me/api-keys', { name: 'forever' }],
      ['GET', '/engrams'],
    ] as Array<[string, string, unknown?]>) {
      const r = await hub.request(method, path, { token: t.access_token, ...(body ? { body } : {}) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(401);
      expect(r.headers.get('content-type')).toContain('application/problem+json');
      expect(r.headers.get('www-authenticate')).toContain('invalid_token');
    }
    const scim = await fetch(`${hub.url}/scim/v2/Users`, { headers: { authorization: `Bearer ${t.access_token}` } });
    expect(scim.status).toBe(401);
    const page = await fetch(`${hub.url}/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.access_token}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'user_id=x&name=k',
    });
    expect(page.status).toBe(401);
    const getPage = await fetch(`${hub.url}/me/`, { headers: { authorization: `Bearer ${t.access_token}` }, redirect: 'manual' });
    expect(getPage.status).not.toBe(200);

    // Keys and browser tokens go where they went.
    expect((await hub.request('GET', '/me', { token: acme.adminKey })).status).toBe(200);
    expect(await mcpWorks(acme.adminKey)).toBe(true);
    const own = await browserToken(browser);
    expect((await hub.request('GET', '/me', { token: own })).status).toBe(200);
    expect(await mcpWorks(own)).toBe(true);
  });

  it('says on the consent page what is granted: client, where it returns, organization, role, what for how long', async () => {
    idp.next = { sub: 'bea-1', email: 'bea@acme.example', email_verified: true };
    const page = await (await register('Claude Desktop')).consentPage(new CookieBrowser(), 'acme');
    expect(page).toContain('<strong>Claude Desktop</strong> (it returns to <strong>127.0.0.1:33419</strong>)');
    expect(page).toContain('as <strong>bea</strong>, an editor of <strong>acme</strong>');
    expect(page).toContain('for 30 days it can read and write the memory you can read and write in acme, through MCP only');
    expect(page).not.toContain('asks to use svc');
  });

  it('lists and revokes grants: the person, the admin, the portal page; revoking ends refresh and access tokens at once', async () => {
    idp.next = { sub: 'cy-1', email: 'cy@acme.example', email_verified: true };
    const browser = new CookieBrowser();
    const client = await register('cy client');
    const first = await client.grant(browser, 'acme');
    const second = await client.grant(new CookieBrowser(), 'acme');
    const own = await browserToken(browser);

    const mine = await hub.request('GET', '/me/grants', { token: own, template: '/me/grants' });
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.items).toHaveLength(2);
    expect(mine.body.items[0]).toMatchObject({
      client_id: client.id,
      client_name: 'cy client',
      user_name: 'cy',
      redirect_hosts: ['127.0.0.1:33419'],
    });
    expect(mine.headers.get('cache-control')).toBe('no-store');

    // The person revokes one: its access token stops on MCP at once, its refresh token too.
    expect(await mcpWorks(first.access_token)).toBe(true);
    // Newest first: the second entry is the first grant.
    const gone = mine.body.items[1];
    const revoked = await hub.request('DELETE', `/me/grants/${gone.id}`, { token: own, template: '/me/grants/{id}' });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.revoked_at).toBeTruthy();
    expect(await mcpWorks(first.access_token)).toBe(false);
    expect(await (await client.refresh(first.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    expect((await hub.request('DELETE', `/me/grants/${gone.id}`, { token: acme.adminKey })).status).toBe(404);

    // The admin sees the other one and revokes it.
    const all = await hub.request('GET', '/admin/grants', { token: acme.adminKey, template: '/admin/grants' });
    const left = all.body.items.filter((g: { user_name: string }) => g.user_name === 'cy');
    expect(left).toHaveLength(1);
    expect(await mcpWorks(second.access_token)).toBe(true);
    expect(
      (await hub.request('DELETE', `/admin/grants/${left[0].id}`, { token: acme.adminKey, template: '/admin/grants/{id}' })).status,
    ).toBe(200);
    expect(await mcpWorks(second.access_token)).toBe(false);
    expect(await (await client.refresh(second.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    expect((await hub.request('GET', '/me/grants', { token: own })).body.items).toHaveLength(0);
    const editor = await acme.user('dee', 'editor');
    expect((await hub.request('GET', '/admin/grants', { token: editor.key })).status).toBe(403);

    // The portal lists a grant with a revoke button that works.
    const third = await client.grant(browser, 'acme');
    const portal = await browser.request('GET', `${hub.url}/me/api-keys`);
    expect(portal.status).toBe(200);
    expect(portal.text).toContain('cy client');
    const action = /action="(\/me\/grants\/[^"]+\/revoke)"/.exec(portal.text)?.[1];
    expect(action).toBeTruthy();
    const posted = await browser.request('POST', `${hub.url}${action}`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: hub.url },
      body: new URLSearchParams({ _csrf: field(portal.text, '_csrf') }).toString(),
    });
    expect(posted.status, posted.text).toBeLessThan(400);
    expect(await (await client.refresh(third.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });

    // And the admin page lists them with a revoke button.
    const fourth = await client.grant(browser, 'acme');
    expect(fourth.access_token).toBeTruthy();
    const adminBrowser = new CookieBrowser();
    idp.next = { sub: 'ada-1', email: 'ada@acme.example', email_verified: true };
    await adminBrowser.follow(`${hub.url}/auth/acme/corp/login?return_to=${encodeURIComponent('/admin/')}`);
    const adminPage = await adminBrowser.request('GET', `${hub.url}/admin/api-keys`);
    expect(adminPage.status, adminPage.text.slice(0, 300)).toBe(200);
    expect(adminPage.text).toMatch(/action="\/admin\/grants\/[^"]+\/revoke"/);
  });

  it('ends grants at sign-out (those consented from that session), at DELETE /me/token, and when their provider is removed', async () => {
    idp.next = { sub: 'eve-1', email: 'eve@acme.example', email_verified: true };
    const client = await register('eve client');
    const browser = new CookieBrowser();
    const fromThis = await client.grant(browser, 'acme');
    const fromOther = await client.grant(new CookieBrowser(), 'acme');
    expect((await browser.request('POST', `${hub.url}/auth/logout`, { headers: { origin: hub.url } })).status).toBe(204);
    expect(await (await client.refresh(fromThis.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    expect(await mcpWorks(fromThis.access_token)).toBe(false);

    // The token of the other grant ends itself, and its grant with it.
    const r = await hub.request('DELETE', '/me/token', { token: fromOther.access_token });
    expect(r.status, r.text).toBe(200);
    expect(await (await client.refresh(fromOther.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });

    // Removing the provider they signed in through ends the rest.
    const last = await client.grant(new CookieBrowser(), 'acme');
    expect(await mcpWorks(last.access_token)).toBe(true);
    expect((await hub.request('DELETE', `/admin/identity-providers/${providerId}`, { token: acme.adminKey })).status).toBe(204);
    expect(await mcpWorks(last.access_token)).toBe(false);
    expect(await (await client.refresh(last.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    const back = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: {
        name: 'corp',
        kind: 'oidc',
        issuer: idp.issuer,
        client_id: 'svc-corp',
        client_secret: 'corp-secret',
        create_users: true,
        default_role: 'editor',
      },
    });
    providerId = back.body.id;
  });

  it('validates a refresh before it rotates, and a spent refresh token used again ends the whole grant', async () => {
    idp.next = { sub: 'fay-1', email: 'fay@acme.example', email_verified: true };
    const client = await register('fay client');
    const t = await client.grant(new CookieBrowser(), 'acme');
    const bad = await client.refresh(t.refresh_token, { resource: 'https://elsewhere.example/' });
    expect(await bad.json()).toMatchObject({ error: 'invalid_target' });
    const good = await client.refresh(t.refresh_token);
    expect(good.status).toBe(200);
    const next = (await good.json()) as Tokens;
    expect(await mcpWorks(next.access_token)).toBe(true);
    // The old one again: it leaked. The grant ends: the new refresh token and access token too.
    expect(await (await client.refresh(t.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    expect(await (await client.refresh(next.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    expect(await mcpWorks(next.access_token)).toBe(false);
    await hub.running.hub.audit.drain();
    const rows = await queryAudit(hub.db, acme.org, { actor: 'fay', limit: 50 });
    expect(rows.map((r) => r.action)).toContain('oauth.refresh_reused');
  });

  it('never redirects an invalid authorization request: a 400 page on the hub', async () => {
    const client = await register();
    for (const [extra, why] of [
      [{ response_type: 'token', redirect_uri: 'https://evil.example/cb' }, 'unregistered redirect'],
      [{ response_type: 'token' }, 'registered redirect, implicit flow'],
      [{ code_challenge_method: 'plain' }, 'no S256'],
      [{ resource: 'https://evil.example/' }, 'foreign resource'],
    ] as Array<[Record<string, string>, string]>) {
      const r = await fetch(client.authorizeUrl(extra), { redirect: 'manual' });
      expect(r.status, why).toBe(400);
      expect(r.headers.get('location'), why).toBeNull();
      expect(r.headers.get('content-type'), why).toContain('text/html');
    }
  });

  it('limits registration and authorization per client address (429, Retry-After), and sweeps what was never used', async () => {
    const body = JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'flood' });
    const json = { 'content-type': 'application/json' };
    // Until the first refusal (the window slides, so a minute that turns meanwhile may let one more in).
    const codes: number[] = [];
    let limited: Awaited<ReturnType<typeof fromAddress>> | undefined;
    while (!limited && codes.length < 20) {
      const r = await fromAddress('127.0.0.2', 'POST', `${hub.url}/oauth/register`, body, json);
      codes.push(r.status);
      if (r.status === 429) limited = r;
    }
    expect(codes.slice(0, 10)).toEqual(Array(10).fill(201));
    expect(limited!.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(limited!.text)).toMatchObject({ error: 'temporarily_unavailable' });
    // Another address registers as before.
    expect((await fromAddress('127.0.0.3', 'POST', `${hub.url}/oauth/register`, body, json)).status).toBe(201);

    const client = await register();
    const before = await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${CONTROL_SCHEMA}.oauth_requests`);
    const statuses: number[] = [];
    while (statuses.at(-1) !== 429 && statuses.length < 40)
      statuses.push((await fromAddress('127.0.0.4', 'GET', client.authorizeUrl())).status);
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(302));
    expect(statuses.at(-1)).toBe(429);
    // One row per request let through, none for the refused.
    const after = await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${CONTROL_SCHEMA}.oauth_requests`);
    expect(Number(after.rows[0]!.n) - Number(before.rows[0]!.n)).toBe(statuses.length - 1);

    // A day later, clients that never got a token and expired requests are gone.
    await hub.db.query(`UPDATE ${CONTROL_SCHEMA}.oauth_clients SET created_at = now() - interval '25 hours' WHERE client_name = 'flood'`);
    await hub.db.query(`UPDATE ${CONTROL_SCHEMA}.oauth_requests SET expires_at = now() - interval '1 second' WHERE client_id = $1`, [
      client.id,
    ]);
    await fromAddress('127.0.0.5', 'POST', `${hub.url}/oauth/register`, body, json);
    const flood = await hub.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${CONTROL_SCHEMA}.oauth_clients WHERE client_name = 'flood'`,
    );
    expect(Number(flood.rows[0]!.n)).toBe(1);
    const pending = await hub.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${CONTROL_SCHEMA}.oauth_requests WHERE client_id = $1`,
      [client.id],
    );
    expect(Number(pending.rows[0]!.n)).toBe(0);
    // A client that did get a token stays.
    const used = await hub.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${CONTROL_SCHEMA}.oauth_clients WHERE last_used_at IS NOT NULL`,
    );
    expect(Number(used.rows[0]!.n)).toBeGreaterThan(0);
  });

  it('marks every API, OAuth and SCIM answer no-store', async () => {
    for (const [method, path, body] of [
      ['GET', '/me'],
      ['GET', '/engrams'],
      ['POST', '/me/api-keys', { name: 'cache test' }],
      ['GET', '/sessions'],
      ['GET', '/nothing-here'],
    ] as Array<[string, string, unknown?]>) {
      const r = await hub.request(method, path, { token: acme.adminKey, ...(body ? { body } : {}) });
      expect(r.headers.get('cache-control'), `${method} ${path}`).toBe('no-store');
    }
    expect((await fetch(`${hub.url}/scim/v2/Users`)).headers.get('cache-control')).toBe('no-store');
    expect((await noClientToken({ grant_type: 'nope' })).headers.get('cache-control')).toBe('no-store');
  });
});
