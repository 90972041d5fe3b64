import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { CookieBrowser, type Page } from './support/cookie-browser.js';
import { startSamlIdp, type SamlIdp, type SamlMode } from './support/saml-idp.js';

// SAML 2.0 sign-in with the hub as service provider, against an IdP that signs real responses
// (hub/test/support/saml-idp.ts): the person's browser follows the redirect to the IdP and posts
// the IdP's form to the hub's ACS, as a browser's auto-posting form would.

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
    expect(made.body).toMatchObject({ kind: 'saml', issuer: idp.entityId, sso_url: `${idp.url}/sso`, redirect_uri: `${hub.url}/auth/acme/okta/acs`, metadata_url: `${hub.url}/auth/acme/okta/metadata`, client_id: null });
    loginUrl = made.body.login_url;
  }, 60_000);
  afterAll(async () => {
    await idp?.close();
    await hub?.close();
  });

  /** To the IdP and back: the IdP's form, posted to the ACS by the browser. */
  async function signIn(browser = new CookieBrowser(), returnTo = '/me/'): Promise<{ browser: CookieBrowser; form: { action: string; body: string }; page: Page }> {
    const atIdp = await browser.follow(`${loginUrl}?return_to=${encodeURIComponent(returnTo)}`);
    expect(atIdp.status, atIdp.text).toBe(200);
    const action = /action="([^"]+)"/.exec(atIdp.text)![1]!;
    const fields = Object.fromEntries([...atIdp.text.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const form = { action, body: new URLSearchParams(fields).toString() };
    const page = await post(browser, form);
    return { browser, form, page };
  }
  const post = (b: CookieBrowser, form: { action: string; body: string }) => b.request('POST', form.action, { headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'null' }, body: form.body });

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
    const { form, page } = await signIn();
    expect(page.status).toBe(302);
    const replay = await post(new CookieBrowser(), form);
    expect(replay.status).toBe(401);
    expect(JSON.parse(replay.text).detail).toMatch(/InResponseTo|replayed|used already/);

    idp.next = { nameId: 'gil@elsewhere.example', email: 'gil@elsewhere.example' };
    const outside = await signIn();
    expect(outside.page.status).toBe(401);
    expect(JSON.parse(outside.page.text).detail).toMatch(/no verified e-mail address in acme.example/);
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
    for (const body of bad) expect((await hub.request('POST', '/admin/identity-providers', { token: acme.adminKey, body })).status, body.name).toBe(400);
  });
});
