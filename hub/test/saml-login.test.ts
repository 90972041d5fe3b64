import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../data/sql.js';
import { launchBrowser } from './support/browser.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { CookieBrowser, type Page } from './support/cookie-browser.js';
import { startSamlIdp, type SamlIdp, type SamlMode } from './support/saml-idp.js';

// SAML 2.0 sign-in with the hub as service provider, against an IdP that signs real responses
// (hub/test/support/saml-idp.ts): the person's browser follows the redirect to the IdP and posts
// the IdP's form to the hub's ACS, as a browser's auto-posting form would. Login CSRF (a response
// someone obtained for their own account, auto-posted from another site by a victim's browser) is
// tried in headless Chromium, with the IdP and the attacker on another site than the hub.

describe.each(DATABASES)('signing in with SAML 2.0 (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: SamlIdp;
  let loginUrl: string;

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    idp = await startSamlIdp();
    const made = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: { name: 'okta', kind: 'saml', idp_metadata: idp.metadata(), allowed_domains: ['acme.example'], create_users: true },
      template: '/admin/identity-providers',
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({
      kind: 'saml',
      issuer: idp.entityId,
      sso_url: `${idp.url}/sso`,
      redirect_uri: `${hub.url}/auth/acme/okta/acs`,
      metadata_url: `${hub.url}/auth/acme/okta/metadata`,
      client_id: null,
    });
    loginUrl = made.body.login_url;
  }, 60_000);
  afterAll(async () => {
    await idp?.close();
    await hub?.close();
  });

  /** To the IdP and back: the IdP's form, posted to the ACS by the browser. */
  async function signIn(
    browser = new CookieBrowser(),
    returnTo = '/me/',
  ): Promise<{ browser: CookieBrowser; form: { action: string; body: string }; page: Page }> {
    const atIdp = await browser.follow(`${loginUrl}?return_to=${encodeURIComponent(returnTo)}`);
    expect(atIdp.status, atIdp.text).toBe(200);
    const action = /action="([^"]+)"/.exec(atIdp.text)![1]!;
    const fields = Object.fromEntries([...atIdp.text.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const form = { action, body: new URLSearchParams(fields).toString() };
    const page = await post(browser, form);
    return { browser, form, page };
  }
  const post = (b: CookieBrowser, form: { action: string; body: string }) =>
    b.request('POST', form.action, { headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' }, body: form.body });
  /** The IdP's form, not posted: what an attacker keeps after starting a sign-in to their own account. */
  async function obtain(browser: CookieBrowser, url = loginUrl): Promise<{ action: string; fields: Record<string, string> }> {
    const atIdp = await browser.follow(url);
    expect(atIdp.status, atIdp.text).toBe(200);
    return {
      action: /action="([^"]+)"/.exec(atIdp.text)![1]!,
      fields: Object.fromEntries([...atIdp.text.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])),
    };
  }

  it('signs a person in from a signed assertion, creates their user, and the session mints hub tokens', async () => {
    idp.mode = 'honest';
    idp.next = { nameId: 'carol@acme.example', email: 'carol@acme.example' };
    const { browser, page } = await signIn(undefined, '/me/keys');
    expect(page.status, page.text).toBe(302);
    expect(page.headers.get('location')).toBe('/me/keys');
    const token = JSON.parse((await browser.request('POST', `${hub.url}/auth/token`)).text).token;
    expect((await hub.request('GET', '/me', { token })).body).toMatchObject({ user: { name: 'carol' }, role: 'viewer' });
  });

  it('accepts a signed response around an unsigned assertion, and configuration without metadata', async () => {
    idp.mode = 'response-signed';
    idp.next = { nameId: 'dave@acme.example', email: 'dave@acme.example' };
    expect((await signIn()).page.status).toBe(302);
    const manual = await hub.request('POST', '/admin/identity-providers', {
      token: acme.adminKey,
      body: { name: 'okta-manual', kind: 'saml', issuer: idp.entityId, sso_url: `${idp.url}/sso`, idp_cert: idp.cert, create_users: true },
    });
    expect(manual.status, manual.text).toBe(201);
  });

  it('serves the SP metadata naming its entity ID and ACS', async () => {
    const r = await fetch(`${hub.url}/auth/acme/okta/metadata`);
    expect(r.headers.get('content-type')).toContain('samlmetadata+xml');
    const xml = await r.text();
    expect(xml).toContain(`entityID="${hub.url}/auth/acme/okta/metadata"`);
    expect(xml).toContain(`Location="${hub.url}/auth/acme/okta/acs"`);
  });

  it.each<[SamlMode, RegExp]>([
    ['unsigned', /signature/i],
    ['other-key', /signature/i],
    ['wrapped', /signature|multiple|assertion/i],
    ['wrong-audience', /audience/i],
    ['expired', /expired|no valid subject confirmation/i],
    ['wrong-recipient', /recipient/i],
    ['wrong-issuer', /issuer/i],
    ['unsolicited', /InResponseTo/i],
  ])('refuses a response that is %s', async (mode, why) => {
    idp.mode = mode;
    idp.next = { nameId: 'erin@acme.example', email: 'erin@acme.example' };
    const { browser, page } = await signIn();
    expect(page.status, page.text).toBe(401);
    expect(JSON.parse(page.text).detail).toMatch(why);
    expect(browser.cookie('127.0.0.1', 'svc_session')).toBeUndefined();
  });

  it('refuses a replayed response and an address outside the allowed domains', async () => {
    idp.mode = 'honest';
    idp.next = { nameId: 'fay@acme.example', email: 'fay@acme.example' };
    const { browser, form, page } = await signIn();
    expect(page.status).toBe(302);
    // Another browser has no sign-in of its own: refused before the response is looked at.
    const elsewhere = await post(new CookieBrowser(), form);
    expect(elsewhere.status).toBe(401);
    expect(JSON.parse(elsewhere.text).detail).toMatch(/not asked for by this browser/);
    // The same browser, its cookie put back: the sign-in is spent.
    const relay = new URLSearchParams(form.body).get('RelayState')!;
    browser.jar.get('127.0.0.1')!.set('__Host-svc_saml', relay);
    expect(JSON.parse((await post(browser, form)).text).detail).toMatch(/used already/);
    // The same browser in a new sign-in of its own, the old response posted with its RelayState: it answers another request.
    const fresh = await obtain(browser);
    const stale = new URLSearchParams(form.body);
    stale.set('RelayState', fresh.fields.RelayState!);
    const replay = await post(browser, { action: form.action, body: stale.toString() });
    expect(replay.status).toBe(401);
    expect(JSON.parse(replay.text).detail).toMatch(/InResponseTo|replayed/);

    idp.next = { nameId: 'gil@elsewhere.example', email: 'gil@elsewhere.example' };
    const outside = await signIn();
    expect(outside.page.status).toBe(401);
    expect(JSON.parse(outside.page.text).detail).toMatch(/no verified e-mail address in acme.example/);
  });

  describe('in Chromium, with the IdP and an attacker on other sites', () => {
    let browser: Browser;
    let away: SamlIdp;
    let awayLogin: string;
    let attacker: Server;
    let attackerUrl: string;
    let forged: { action: string; fields: Record<string, string> } = { action: '', fields: {} };

    beforeAll(async () => {
      browser = await launchBrowser();
      // localhost is another site than the hub's 127.0.0.1: the IdP's POST to the ACS is cross-site.
      away = await startSamlIdp({ host: 'localhost' });
      const made = await hub.request('POST', '/admin/identity-providers', {
        token: acme.adminKey,
        body: { name: 'okta-away', kind: 'saml', idp_metadata: away.metadata(), create_users: true },
      });
      expect(made.status, made.text).toBe(201);
      awayLogin = made.body.login_url;
      // The attacker's page auto-posts the response they obtained for their own account.
      attacker = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(
          `<form method="post" action="${forged.action}">${Object.entries(forged.fields)
            .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
            .join('')}</form><script>document.forms[0].submit()</script>`,
        );
      });
      await new Promise<void>((done) => attacker.listen(0, '127.0.0.1', done));
      attackerUrl = `http://localhost:${(attacker.address() as AddressInfo).port}/`;
    }, 60_000);
    afterAll(async () => {
      await browser?.close();
      await away?.close();
      await new Promise((done) => attacker?.close(done));
    });

    const sessionOf = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === 'svc_session');

    it('signs a person in: the binding cookie crosses from the IdP to the ACS', async () => {
      away.mode = 'honest';
      away.next = { nameId: 'hana@acme.example', email: 'hana@acme.example' };
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${awayLogin}?return_to=/auth/session`);
      await page.waitForURL(`${hub.url}/auth/session`);
      expect(JSON.parse((await page.textContent('body'))!)).toMatchObject({ user: { name: 'hana' }, org: { slug: 'acme' } });
      expect(await sessionOf(context)).toMatchObject({ name: 'svc_session', httpOnly: true, value: expect.stringMatching(/.{16,}/) });
      await context.close();
    });

    it.each([
      ['has no sign-in under way', false],
      ['has a sign-in of its own under way', true],
    ])('refuses a response the attacker obtained, auto-posted from another site, when the victim %s', async (_label, started) => {
      away.mode = 'honest';
      away.next = { nameId: 'mallory@acme.example', email: 'mallory@acme.example' };
      forged = await obtain(new CookieBrowser(), awayLogin);
      expect(forged.fields.SAMLResponse).toBeTruthy();

      const context = await browser.newContext();
      const page = await context.newPage();
      if (started) {
        // The victim's own sign-in, still at the IdP: its binding cookie is set, its answer not yet posted.
        away.hold = true;
        await page.goto(awayLogin);
        away.hold = false;
        expect((await context.cookies()).find((c) => c.name === '__Host-svc_saml')).toMatchObject({
          secure: true,
          sameSite: 'None',
          httpOnly: true,
          path: '/',
        });
      }
      const acs = page.waitForResponse((r) => r.url() === forged.action);
      await page.goto(attackerUrl);
      const answer = await acs;
      expect(answer.status()).toBe(401);
      await page.waitForLoadState();
      expect(await page.textContent('body')).toMatch(/not asked for by this browser/);
      expect(await sessionOf(context)).toBeUndefined();
      expect((await context.request.get(`${hub.url}/auth/session`)).status()).toBe(401);
      // The victim's own sign-in is left as it was: its answer may still come.
      if (started) expect((await context.cookies()).map((c) => c.name)).toContain('__Host-svc_saml');
      await context.close();
    });
  });

  it('unlinks the accounts of a provider whose entity ID or signing key changes, not of one whose certificate is only written another way', async () => {
    idp.mode = 'honest';
    idp.next = { nameId: 'ken@acme.example', email: 'ken@acme.example' };
    expect((await signIn()).page.status).toBe(302);
    const okta = (await hub.request('GET', '/admin/identity-providers', { token: acme.adminKey })).body.items.find(
      (p: { name: string }) => p.name === 'okta',
    );
    const links = async () =>
      Number(
        (
          await hub.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${ident(acme.org.schema)}.external_identities WHERE provider_id = $1`,
            [okta.id],
          )
        ).rows[0]!.n,
      );
    const patch = (body: Record<string, string>) =>
      hub.request('PATCH', `/admin/identity-providers/${okta.id}`, { token: acme.adminKey, body });
    expect(await links()).toBeGreaterThan(0);
    // The same certificate as the bare base64 metadata holds: the same IdP.
    expect((await patch({ idp_cert: idp.cert.replace(/-----[A-Z ]+-----|\s/g, '') })).status).toBe(200);
    expect(await links()).toBeGreaterThan(0);
    // Another signing key: another IdP, whatever it calls itself.
    const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect((await patch({ idp_cert: other })).status).toBe(200);
    expect(await links()).toBe(0);
    expect((await patch({ idp_cert: idp.cert })).status).toBe(200);
    expect((await signIn()).page.status).toBe(302);
    expect(await links()).toBeGreaterThan(0);
    // Another entity ID: the same.
    expect((await patch({ issuer: 'https://elsewhere.example/idp' })).status).toBe(200);
    expect(await links()).toBe(0);
    expect((await patch({ issuer: idp.entityId })).status).toBe(200);
  });

  it('validates SAML configuration', async () => {
    const bad = [
      { name: 'x1', kind: 'saml', idp_metadata: '<not-xml' },
      { name: 'x2', kind: 'saml', issuer: 'idp', sso_url: `${idp.url}/sso`, idp_cert: 'not a certificate' },
      { name: 'x3', kind: 'saml', issuer: 'idp', sso_url: 'http://idp.example.com/sso', idp_cert: idp.cert },
      { name: 'x4', kind: 'saml', issuer: 'idp', idp_cert: idp.cert },
      { name: 'x5', kind: 'saml', idp_metadata: idp.metadata(), client_id: 'a' },
      { name: 'x6', kind: 'oidc', issuer: 'https://idp.example.com', client_id: 'a', client_secret: 'b', idp_cert: idp.cert },
    ];
    for (const body of bad)
      expect((await hub.request('POST', '/admin/identity-providers', { token: acme.adminKey, body })).status, body.name).toBe(400);
  });
});
