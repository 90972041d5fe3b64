import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser } from '../access/identity.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { type IdpAccount, type OidcIdp } from './support/oidc-idp.js';
import { CookieBrowser } from './support/cookie-browser.js';
import { OAuthClient } from './support/oauth-client.js';
import { launchBrowser, screenshot, seriousViolations } from './support/browser.js';
import { startCorpIdp } from './support/corp-idp.js';

// The MCP clients a person connected through OAuth, in Chromium: listed on their portal page and,
// for an admin, on the API keys page, each with a Revoke button that ends the client's tokens.

const ADA: IdpAccount = { sub: 'ada-1', email: 'ada@acme.example', email_verified: true, name: 'Ada' };
const BEA: IdpAccount = { sub: 'bea-1', email: 'bea@acme.example', email_verified: true, name: 'Bea' };

describe.each(DATABASES)('connected MCP clients in the portal and the admin UI (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: OidcIdp;
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
    hub = await startTestHub(kind, { allowPrivateUrls: true });
    acme = await hub.newOrg('acme');
    ({ idp } = await startCorpIdp(hub, acme, { default_role: 'editor' }));
    await createUser(hub.db, acme.org, { name: 'ada', role: 'admin', email: 'ada@acme.example' });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await idp?.close();
    await hub?.close();
  });

  async function signIn(account: IdpAccount, path: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${hub.url}${path}`);
    await page.getByLabel('Organization', { exact: true }).fill('acme');
    await page.getByRole('button', { name: 'Continue' }).click();
    idp.next = account;
    await page.getByRole('link', { name: 'corp' }).click();
    await page.waitForURL((u) => u.pathname === path);
    return { context, page };
  }

  /** Bea connects a client (signing in at the provider in a browser of its own). */
  async function beaConnects(name: string) {
    idp.next = BEA;
    const client = await OAuthClient.register(hub.url, name);
    return { client, tokens: await client.grant(new CookieBrowser(), 'acme') };
  }

  it("lists my connected clients on /me/api-keys; Revoke ends the client's tokens", async () => {
    const { client, tokens } = await beaConnects('Bea laptop agent');
    const { context, page } = await signIn(BEA, '/me/api-keys');
    const row = page.getByRole('row', { name: /Bea laptop agent/ });
    expect(await row.getByRole('cell', { name: '127.0.0.1:33419' }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, `grants-${kind}`, 'me-api-keys');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'grant-revoked');
    expect(await page.getByRole('status').textContent()).toContain('The MCP client was disconnected');
    expect(await page.getByRole('row', { name: /Bea laptop agent/ }).count()).toBe(0);
    expect(await (await client.refresh(tokens.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    await context.close();
  });

  it("lists everyone's connected clients on /admin/api-keys for an admin; Revoke ends them", async () => {
    const { client, tokens } = await beaConnects('Bea desktop agent');
    const { context, page } = await signIn(ADA, '/admin/api-keys');
    const row = page.getByRole('row', { name: /Bea desktop agent/ });
    expect(await row.getByRole('cell', { name: 'bea', exact: true }).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, `grants-${kind}`, 'admin-api-keys');
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.waitForURL((u) => u.searchParams.get('done') === 'grant-revoked');
    expect(await page.getByRole('row', { name: /Bea desktop agent/ }).count()).toBe(0);
    expect(await (await client.refresh(tokens.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' });
    await context.close();
  });
});
