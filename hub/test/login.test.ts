import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser, deleteUser, updateUser } from '../access/identity.js';
import { queryAudit } from '../audit/audit-log.js';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { CookieBrowser } from './support/cookie-browser.js';
import { startOidcIdp, type OidcIdp } from './support/oidc-idp.js';
import { startGithubStandIn, type GithubStandIn } from './support/github-stand-in.js';
import { startHostileIdp, type HostileIdp, type HostileMode } from './support/hostile-oidc.js';

// Signing in as a person does it, through a browser that follows redirects and keeps cookies:
// OIDC against oidc-provider (a certified OpenID Provider; also standing in for a self-managed
// GitLab), GitHub through a loopback stand-in of its OAuth endpoints and user API, and an IdP
// that lies about its ID tokens. Every path ends in the hub's own token, bound to a session.
// (An ID token signed with a key the IdP does not publish is not among the refusals: it comes
// straight from the token endpoint, which OIDC Core 3.1.3.7 lets TLS vouch for, and openid-client
// checks its claims, not its signature.) The IdPs are on loopback, which the outbound policy allows
// only with allowPrivateUrls (SVC_HUB_ALLOW_PRIVATE_URLS=1): the main hub opts in, a strict one shows
// the policy applied to providers when saved and when fetched.

/** A stand-in for whatever answers at an address: counts its requests, answers as told. */
async function startSink(
  answer: (res: import('node:http').ServerResponse) => void,
): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server: Server = createServer((_req, res) => {
    hits++;
    answer(res);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits: () => hits,
    close: () => new Promise((done) => server.close(() => done())),
  };
}

describe.each(DATABASES)('signing in (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: OidcIdp;
  let github: GithubStandIn;
  let hostile: HostileIdp;
  const login: Record<string, string> = {};

  beforeAll(async () => {
    hub = await startTestHub(kind, { allowPrivateUrls: true });
    acme = await hub.newOrg('acme');
    const cb = (name: string) => `${hub.url}/auth/acme/${name}/callback`;
    idp = await startOidcIdp([
      { client_id: 'svc-corp', client_secret: 'corp-secret', redirect_uris: [cb('corp')] },
      { client_id: 'svc-gitlab', client_secret: 'gitlab-secret', redirect_uris: [cb('gitlab')] },
    ]);
    github = await startGithubStandIn({ id: 'gh-client', secret: 'gh-secret' });
    hostile = await startHostileIdp('svc-evil');
    const providers = [
      {
        name: 'corp',
        kind: 'oidc',
        issuer: idp.issuer,
        client_id: 'svc-corp',
        client_secret: 'corp-secret',
        allowed_domains: ['acme.example'],
        create_users: true,
      },
      { name: 'gitlab', kind: 'gitlab', issuer: idp.issuer, client_id: 'svc-gitlab', client_secret: 'gitlab-secret' },
      {
        name: 'github',
        kind: 'github',
        issuer: github.base,
        client_id: 'gh-client',
        client_secret: 'gh-secret',
        allowed_domains: ['acme.example'],
        create_users: true,
        default_role: 'editor',
      },
      { name: 'evil', kind: 'oidc', issuer: hostile.issuer, client_id: 'svc-evil', client_secret: 'evil-secret', create_users: true },
    ];
    for (const p of providers) {
      const r = await hub.request('POST', '/admin/identity-providers', {
        token: acme.adminKey,
        body: p,
        template: '/admin/identity-providers',
      });
      expect(r.status, r.text).toBe(201);
      expect(r.body).not.toHaveProperty('client_secret');
      expect(r.body.redirect_uri).toBe(cb(p.name));
      login[p.name] = r.body.login_url;
    }
  }, 60_000);
  afterAll(async () => {
    await Promise.all([idp?.close(), github?.close(), hostile?.close()]);
    await hub?.close();
  });

  const atCallback = (u: URL) => u.pathname.endsWith('/callback') && u.port === new URL(hub.url).port;
  const returned = (u: URL) => u.port === new URL(hub.url).port && !u.pathname.startsWith('/auth/acme/');

  /** Signs in through a provider; the page where the hub sent the browser back, and the browser. */
  async function signIn(provider: string, returnTo = '/me/') {
    const browser = new CookieBrowser();
    const page = await browser.follow(`${login[provider]}?return_to=${encodeURIComponent(returnTo)}`, returned);
    return { browser, page };
  }
  const token = async (b: CookieBrowser) => b.request('POST', `${hub.url}/auth/token`);
  const me = (t: string) => hub.request('GET', '/me', { token: t });

  it('signs a person in through OIDC, creates their user, mints hub tokens from the session, and signing out ends both', async () => {
    idp.next = { sub: 'alice-1', email: 'alice@acme.example', email_verified: true, name: 'Alice' };
    const { browser, page } = await signIn('corp', '/me/keys?tab=1');
    expect(page.status).toBe(302);
    expect(page.stoppedAt).toBe(`${hub.url}/me/keys?tab=1`);
    const cookie = page.headers.getSetCookie().find((c) => c.startsWith('svc_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);

    const session = await browser.request('GET', `${hub.url}/auth/session`);
    expect(JSON.parse(session.text)).toMatchObject({ user: { name: 'alice' }, org: { slug: 'acme' }, role: 'viewer' });
    const minted = await token(browser);
    expect(minted.status).toBe(200);
    const t = JSON.parse(minted.text);
    expect(t).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
    const who = await me(t.token);
    expect(who.status).toBe(200);
    expect(who.body).toMatchObject({ user: { name: 'alice' }, role: 'viewer', token: { kind: 'jwt' } });
    expect(who.body.scopes.readable).toContain('user:alice');

    // A second sign-in finds the same user through the linked account.
    const again = await signIn('corp');
    expect(JSON.parse((await again.browser.request('GET', `${hub.url}/auth/session`)).text).user.id).toBe(who.body.user.id);

    expect((await browser.request('POST', `${hub.url}/auth/logout`)).status).toBe(204);
    expect((await me(t.token)).status).toBe(401);
    expect((await browser.request('GET', `${hub.url}/auth/session`)).status).toBe(401);
    expect((await token(browser)).status).toBe(401);
    const audit = await queryAudit(hub.db, acme.org, { action: 'auth.login', limit: 10 });
    expect(audit.some((r) => r.actor === 'alice' && r.outcome === 200 && r.details.provider === 'corp')).toBe(true);
  });

  it('links a known person by verified e-mail through a self-managed GitLab, and refuses strangers when it may not create users', async () => {
    const bob = await createUser(hub.db, acme.org, { name: 'bob', role: 'editor', email: 'Bob@Example.org' });
    idp.next = { sub: 'gitlab-bob', email: 'bob@example.org', email_verified: true };
    const { browser } = await signIn('gitlab');
    const t = JSON.parse((await token(browser)).text).token;
    expect((await me(t)).body).toMatchObject({ user: { id: bob.id, name: 'bob' }, role: 'editor' });

    idp.next = { sub: 'gitlab-carol', email: 'carol@example.org', email_verified: true };
    const refused = await signIn('gitlab');
    expect(refused.page.status).toBe(401);
    expect(JSON.parse(refused.page.text).detail).toMatch(/no user of acme has the e-mail address carol@example.org/);
    expect(refused.browser.cookie('127.0.0.1', 'svc_session')).toBeUndefined();
  });

  it('signs in through GitHub by a verified address in an allowed domain only; deactivated users stay out', async () => {
    github.next = {
      id: 501,
      login: 'mallory',
      name: 'M',
      emails: [
        { email: 'mallory@acme.example', primary: true, verified: false },
        { email: 'mallory@gmail.example', primary: false, verified: true },
      ],
    };
    const unverified = await signIn('github');
    expect(unverified.page.status).toBe(401);
    expect(JSON.parse(unverified.page.text).detail).toMatch(/no verified e-mail address in acme.example/);

    github.next = {
      id: 502,
      login: 'dora',
      name: 'Dora',
      emails: [
        { email: 'dora@else.example', primary: true, verified: true },
        { email: 'dora@acme.example', primary: false, verified: true },
      ],
    };
    const { browser, page } = await signIn('github');
    expect(page.stoppedAt).toBe(`${hub.url}/me/`);
    const t = JSON.parse((await token(browser)).text).token;
    const who = await me(t);
    expect(who.body).toMatchObject({ user: { name: 'dora' }, role: 'editor' });

    await updateUser(hub.db, acme.org, who.body.user.id, { active: false });
    expect((await me(t)).status).toBe(401);
    expect((await token(browser)).status).toBe(401);
    const back = await signIn('github');
    expect(back.page.status).toBe(401);
    expect(JSON.parse(back.page.text).detail).toMatch(/deactivated/);
  });

  it('refuses a callback with another state, one from another browser, and a code used twice', async () => {
    idp.next = { sub: 'erin-1', email: 'erin@acme.example', email_verified: true };
    const browser = new CookieBrowser();
    const stop = await browser.follow(login.corp!, atCallback);
    const callback = new URL(stop.stoppedAt!);

    const tampered = new URL(callback);
    tampered.searchParams.set('state', 'x'.repeat(43));
    expect((await browser.request('GET', tampered.href)).status).toBe(401);

    // The attacker's callback, opened in a victim's browser (login CSRF): no attempt cookie there.
    const victim = new CookieBrowser();
    const forced = await victim.request('GET', callback.href);
    expect(forced.status).toBe(401);
    expect(JSON.parse(forced.text).detail).toMatch(/not started by this browser/);

    // The attempt is spent once its callback has been tried; a fresh attempt with the old code fails at the IdP.
    const fresh = new CookieBrowser();
    const second = new URL((await fresh.follow(login.corp!, atCallback)).stoppedAt!);
    second.searchParams.set('code', callback.searchParams.get('code')!);
    const replay = await fresh.request('GET', second.href);
    expect(replay.status).toBe(401);
    expect(fresh.cookie('127.0.0.1', 'svc_session')).toBeUndefined();
  });

  it('refuses a return address on another site', async () => {
    for (const target of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', 'javascript:alert(1)', '/ok\r\nx']) {
      const r = await new CookieBrowser().request('GET', `${login.corp}?return_to=${encodeURIComponent(target)}`);
      expect(r.status, target).toBe(400);
    }
  });

  it.each<[HostileMode, RegExp]>([
    ['wrong-nonce', /nonce/],
    ['wrong-issuer', /iss/],
    ['wrong-audience', /aud/],
    ['alg-none', /alg|signature|JWS/i],
    ['expired', /exp|timestamp/],
    ['unverified-email', /no verified e-mail address/],
  ])('refuses an ID token with %s', async (mode, why) => {
    hostile.mode = mode;
    const { browser, page } = await signIn('evil');
    expect(page.status).toBe(401);
    expect(JSON.parse(page.text).detail).toMatch(why);
    expect(browser.cookie('127.0.0.1', 'svc_session')).toBeUndefined();
  });

  it('accepts the lying IdP when it tells the truth (the refusals above are the checks, not a broken setup)', async () => {
    hostile.mode = 'honest';
    const { page } = await signIn('evil');
    expect(page.stoppedAt).toBe(`${hub.url}/me/`);
  });

  it('refuses session calls from another origin', async () => {
    idp.next = { sub: 'fay-1', email: 'fay@acme.example', email_verified: true };
    const { browser } = await signIn('corp');
    expect((await browser.request('POST', `${hub.url}/auth/token`, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await browser.request('POST', `${hub.url}/auth/logout`, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    expect((await browser.request('POST', `${hub.url}/auth/token`, { headers: { origin: hub.url } })).status).toBe(200);
  });

  it('lets admins configure providers, validates them, never shows a secret, and removing one ends its sessions', async () => {
    const viewer = await acme.user('vic', 'viewer');
    expect((await hub.request('GET', '/admin/identity-providers', { token: viewer.key })).status).toBe(403);
    const list = await hub.request('GET', '/admin/identity-providers', { token: acme.adminKey, template: '/admin/identity-providers' });
    expect(list.body.items.map((p: { name: string }) => p.name)).toEqual(['corp', 'evil', 'github', 'gitlab']);
    expect(list.text).not.toMatch(/secret"/);
    const bad = [
      { name: 'x', kind: 'oidc', issuer: 'http://idp.example.com', client_id: 'a', client_secret: 'b' },
      { name: 'x', kind: 'oidc', client_id: 'a', client_secret: 'b' },
      { name: 'x', kind: 'saml', issuer: 'https://idp.example.com', client_id: 'a', client_secret: 'b' },
      { name: 'x', kind: 'github', client_id: 'a', client_secret: 'b', allowed_domains: ['Not A Domain'] },
      { name: 'Bad Name', kind: 'github', client_id: 'a', client_secret: 'b' },
    ];
    for (const body of bad)
      expect((await hub.request('POST', '/admin/identity-providers', { token: acme.adminKey, body })).status, JSON.stringify(body)).toBe(
        400,
      );
    const dup = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: { name: 'corp', kind: 'github', client_id: 'a', client_secret: 'b' },
    });
    expect(dup.status).toBe(409);
    const gh = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: { name: 'gh-cloud', kind: 'github', client_id: 'a', client_secret: 'b' },
    });
    expect(gh.body).toMatchObject({ issuer: 'https://github.com', create_users: false, default_role: 'viewer' });
    const changed = await hub.request('PATCH', `/admin/identity-providers/${gh.body.id}`, {
      token: acme.adminKey,
      body: { allowed_domains: ['acme.example'] },
      template: '/admin/identity-providers/{id}',
    });
    expect(changed.body.allowed_domains).toEqual(['acme.example']);
    expect(
      (await hub.request('PATCH', `/admin/identity-providers/${gh.body.id}`, { token: acme.adminKey, body: { kind: 'oidc' } })).status,
    ).toBe(400);

    idp.next = { sub: 'gus-1', email: 'gus@acme.example', email_verified: true };
    const { browser } = await signIn('corp');
    const t = JSON.parse((await token(browser)).text).token;
    expect((await me(t)).status).toBe(200);
    const corp = list.body.items.find((p: { name: string }) => p.name === 'corp');
    expect((await hub.request('DELETE', `/admin/identity-providers/${corp.id}`, { token: acme.adminKey })).status).toBe(204);
    expect((await me(t)).status).toBe(401);
    expect((await token(browser)).status).toBe(401);
    expect((await new CookieBrowser().request('GET', login.corp!)).status).toBe(404);
  });
  it('drops the accounts linked through a provider when its issuer changes', async () => {
    hostile.mode = 'honest';
    hostile.email = 'nina@acme.example';
    const first = await signIn('evil');
    expect(first.page.stoppedAt).toBe(`${hub.url}/me/`);
    const nina = (await me(JSON.parse((await token(first.browser)).text).token)).body.user;
    // From now on only the link says who this account is: its address is another person's.
    hostile.email = 'someone-new@acme.example';
    const linked = await signIn('evil');
    expect((await me(JSON.parse((await token(linked.browser)).text).token)).body.user.id).toBe(nina.id);

    const evil = (await hub.request('GET', '/admin/identity-providers', { token: acme.adminKey })).body.items.find(
      (p: { name: string }) => p.name === 'evil',
    );
    const s = ident(acme.org.schema);
    const links = async () =>
      Number(
        (await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.external_identities WHERE provider_id = $1`, [evil.id]))
          .rows[0]!.n,
      );
    expect(await links()).toBeGreaterThan(0);
    // A change that is not the issuer keeps them.
    expect(
      (await hub.request('PATCH', `/admin/identity-providers/${evil.id}`, { token: acme.adminKey, body: { create_users: true } })).status,
    ).toBe(200);
    expect(await links()).toBeGreaterThan(0);

    // Another IdP under the same name, whose account has the same subject, signs nobody in as nina.
    const other = await startHostileIdp('svc-evil');
    try {
      expect(
        (await hub.request('PATCH', `/admin/identity-providers/${evil.id}`, { token: acme.adminKey, body: { issuer: other.issuer } }))
          .status,
      ).toBe(200);
      expect(await links()).toBe(0);
      other.email = 'someone-new@acme.example';
      const after = await signIn('evil');
      expect(after.page.stoppedAt).toBe(`${hub.url}/me/`);
      const who = (await me(JSON.parse((await token(after.browser)).text).token)).body.user;
      expect(who.id).not.toBe(nina.id);
      expect(who.name).toBe('someone-new');
    } finally {
      await other.close();
    }
  });

  it('links by address only a person whose address a provisioning client did not set', async () => {
    const ivy = await createUser(hub.db, acme.org, { name: 'ivy', role: 'viewer', email: 'ivy@example.org' });
    await hub.db.query(`UPDATE ${ident(acme.org.schema)}.users SET email_scim_changed_at = now() WHERE id = $1`, [ivy.id]);
    idp.next = { sub: 'gitlab-ivy', email: 'ivy@example.org', email_verified: true };
    const refused = await signIn('gitlab');
    expect(refused.page.status).toBe(401);
    expect(JSON.parse(refused.page.text).detail).toMatch(/provisioning client/);
    // A deleted person's address is nobody's: the live person with it is linked.
    const gone = await createUser(hub.db, acme.org, { name: 'oli-old', role: 'viewer', email: 'oli@example.org' });
    await deleteUser(hub.db, acme.org, gone.id);
    const oli = await createUser(hub.db, acme.org, { name: 'oli', role: 'editor', email: 'oli@example.org' });
    idp.next = { sub: 'gitlab-oli', email: 'oli@example.org', email_verified: true };
    const linked = await signIn('gitlab');
    expect((await me(JSON.parse((await token(linked.browser)).text).token)).body.user.id).toBe(oli.id);
    // An unverified address links nobody either.
    idp.next = { sub: 'gitlab-bob-2', email: 'bob@example.org', email_verified: false };
    expect((await signIn('gitlab')).page.status).toBe(401);
  });

  it('fetches a provider only through the outbound policy, and tells an anonymous caller only that it is unavailable', async () => {
    const s = ident(acme.org.schema);
    // An issuer answering an error page with internal detail in it, and one that redirects inward.
    const broken = await startSink((res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('db=10.0.0.7 password=hunter2'));
    const inward = await startSink((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const redirecting = await startSink((res) => res.writeHead(302, { location: `${inward.url}/.well-known/openid-configuration` }).end());
    try {
      for (const [name, sink] of [
        ['broken', broken],
        ['redirecting', redirecting],
      ] as const) {
        const made = await hub.request('POST', '/admin/identity-providers', {
          token: acme.adminKey,
          body: { name, kind: 'oidc', issuer: sink.url, client_id: 'a', client_secret: 'b' },
        });
        expect(made.status, made.text).toBe(201);
        const r = await new CookieBrowser().request('GET', made.body.login_url);
        expect(r.status, r.text).toBe(502);
        expect(JSON.parse(r.text).detail).toBe(`sign-in through ${name} is unavailable; try again later, or tell an admin of acme`);
        // The request id is random hex: it may hold "500" or "302" by chance.
        expect(r.text.replace(/"request_id":"[^"]*"/, '')).not.toMatch(/hunter2|10\.0\.0\.7|127\.0\.0\.1|302|500/);
        // A browser gets the same as a page.
        const page = await new CookieBrowser().request('GET', made.body.login_url, { headers: { accept: 'text/html,*/*;q=0.8' } });
        expect(page.status).toBe(502);
        expect(page.headers.get('content-type')).toMatch(/text\/html/);
        expect(page.text).toMatch(/is unavailable/);
        expect(page.text).not.toMatch(/hunter2|127\.0\.0\.1/);
      }
      // The redirect was not followed.
      expect(redirecting.hits()).toBe(2);
      expect(inward.hits()).toBe(0);

      // A hub that keeps to public addresses refuses loopback issuers when they are saved...
      const logged: string[] = [];
      const strict = await startTestHub(kind, { log: (m) => logged.push(m) });
      try {
        const org = await strict.newOrg('acme');
        for (const issuer of [
          idp.issuer,
          'https://127.0.0.1/',
          'https://[::ffff:7f00:1]/',
          'https://[::127.0.0.1]/',
          'https://169.254.169.254/',
          'https://localhost/',
          'https://[64:ff9b::a9fe:a9fe]/',
        ]) {
          const r = await strict.request('POST', '/admin/identity-providers', {
            token: org.adminKey,
            body: { name: 'corp', kind: 'oidc', issuer, client_id: 'a', client_secret: 'b' },
          });
          expect(r.status, `${issuer}: ${r.text}`).toBe(400);
          expect(r.body.detail, issuer).toMatch(/private, loopback or link-local|https/);
        }
        // ...and when they are fetched: one that got in (a name that resolved elsewhere when saved) is not contacted.
        const sink = await startSink((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
        try {
          await strict.db.query(
            `INSERT INTO ${ident(org.org.schema)}.identity_providers (id, name, kind, issuer, client_id, client_secret) VALUES ('p-sneaky', 'sneaky', 'oidc', $1, 'a', 'b')`,
            [sink.url],
          );
          const r = await new CookieBrowser().request('GET', `${strict.url}/auth/acme/sneaky/login`);
          expect(r.status).toBe(502);
          expect(JSON.parse(r.text).detail).toBe('sign-in through sneaky is unavailable; try again later, or tell an admin of acme');
          expect(sink.hits()).toBe(0);
          // The detail is for the operator.
          expect(logged.some((m) => m.includes('acme/sneaky') && /only https URLs are fetched/.test(m))).toBe(true);
        } finally {
          await sink.close();
        }
      } finally {
        await strict.close();
      }
    } finally {
      await Promise.all([broken.close(), redirecting.close(), inward.close()]);
      await hub.db.query(`DELETE FROM ${s}.identity_providers WHERE name IN ('broken', 'redirecting')`);
    }
  });
});
