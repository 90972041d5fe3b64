import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { launchBrowser, screenshot, seriousViolations } from './support/browser.js';

// Day one in Chromium, with no identity provider: the first admin opens the sign-in link svc hub
// printed, invites a colleague from the people page, and the colleague opens the invitation,
// lands signed in with their first key. Used links are refused with a page that says why.

describe.each(DATABASES)("a team's first day in Chromium, without a provider (%s)", (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let browser: Browser;

  beforeAll(async () => {
    browser = await launchBrowser();
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.close();
  });

  const fresh = async (): Promise<Page> => (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();

  it('the admin signs in with a link, invites bob, and bob joins in his own browser; each link works once', async () => {
    const link = (await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: {} })).body.url as string;
    const admin = await fresh();
    await admin.goto(link);
    expect(await seriousViolations(admin)).toEqual([]);
    await admin.getByRole('button', { name: 'Sign in as admin' }).click();
    await admin.waitForURL((u) => u.pathname === '/admin/');
    expect(await admin.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');

    // The key form offers only what works: the admin themselves and service accounts.
    await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'carol', role: 'editor' } });
    await admin.goto(`${hub.url}/admin/api-keys`);
    const offered = await admin.getByLabel('For user').locator('option').allTextContents();
    expect(offered).toEqual(['admin']);
    expect(await admin.getByText('invite them').count()).toBe(1);

    await admin.goto(`${hub.url}/admin/users`);
    await admin.getByRole('textbox', { name: 'E-mail' }).fill('bob@example.com');
    await admin.getByRole('button', { name: 'Invite' }).click();
    await screenshot(admin, 'first-day', 'invited');
    const invitation = (await admin.locator('#new-secret').textContent())!.trim();
    expect(invitation).toMatch(new RegExp(`^${hub.url}/invite/svc_inv_`));
    expect(await admin.getByText('Send it to bob (added) yourself').count()).toBe(1);

    const bob = await fresh();
    await bob.goto(invitation);
    expect(await seriousViolations(bob)).toEqual([]);
    await bob.getByRole('button', { name: 'Accept and sign in' }).click();
    const key = (await bob.locator('#new-secret').textContent())!.trim();
    expect(key).toMatch(/^svc_sk_/);
    expect((await hub.request('GET', '/me', { token: key })).body.user.name).toBe('bob');
    await bob.getByRole('link', { name: 'Continue' }).click();
    await bob.waitForURL((u) => u.pathname === '/me/');
    expect(await bob.getByRole('heading', { level: 1 }).textContent()).toBe('Signed in as bob');

    // Both links are spent: another browser gets a page saying so.
    const stranger = await fresh();
    await stranger.goto(invitation);
    expect(await stranger.getByRole('heading', { level: 1 }).textContent()).toBe('Invitation refused');
    await stranger.goto(link);
    expect(await stranger.getByRole('heading', { level: 1 }).textContent()).toBe('Sign-in link refused');
    expect(await stranger.getByRole('alert').textContent()).toMatch(/used already/);
    expect(await seriousViolations(stranger)).toEqual([]);
    await screenshot(stranger, 'first-day', 'link-used');
    await stranger.goto(`${hub.url}/admin/`);
    expect(new URL(stranger.url()).pathname).toBe('/sign-in');
  });

  it('the sign-in page says how to get a link when there is no provider', async () => {
    const page = await fresh();
    await page.goto(`${hub.url}/sign-in?org=acme`);
    expect(await page.getByRole('heading', { name: 'Sign in with a link' }).count()).toBe(1);
    expect(await page.locator('main').textContent()).toMatch(
      /Ask an admin of acme for a sign-in link, or, on the hub's machine, run svc hub login-link --org acme/,
    );
    expect(await seriousViolations(page)).toEqual([]);
  });
});
