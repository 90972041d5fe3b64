import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { createUser } from '../access/identity.js';
import { queryAudit } from '../audit/audit-log.js';
import { asOwner } from './support/audit-tamper.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { type IdpAccount, type OidcIdp } from './support/oidc-idp.js';
import { startReceiver, type Receiver } from './support/webhook-receiver.js';
import { launchBrowser, screenshot, seriousViolations, WIDTHS } from './support/browser.js';
import { startCorpIdp } from './support/corp-idp.js';

// The admin UI and the portal in Debian's Chromium, as a person clicks through them: signing in
// through the organization's OIDC provider, issuing and revoking a key, a webhook and its test
// event at a loopback receiver, the audit log paged and verified, an engram retired, a pack
// installed by upload. Viewers stay out of /admin/, no page shows without a session, a form
// from another origin or without its token is refused, and every page passes axe at desktop
// and phone widths (screenshots kept in test-artifacts/screenshots).

const ADA: IdpAccount = { sub: 'ada-1', email: 'ada@acme.example', email_verified: true, name: 'Ada' };
const VIC: IdpAccount = { sub: 'vic-1', email: 'vic@acme.example', email_verified: true, name: 'Vic' };

describe.each(DATABASES)('the admin UI and the portal in Chromium (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let idp: OidcIdp;
  let receiver: Receiver;
  let browser: Browser;
  let admin: { context: BrowserContext; page: Page };

  beforeAll(async () => {
    browser = await launchBrowser();
    hub = await startTestHub(kind, { allowPrivateUrls: true });
    acme = await hub.newOrg('acme');
    ({ idp } = await startCorpIdp(hub, acme, { allowed_domains: ['acme.example'] }));
    await createUser(hub.db, acme.org, { name: 'ada', role: 'admin', email: 'ada@acme.example' });
    receiver = await startReceiver();
    admin = await signIn(ADA, '/admin/');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([idp?.close(), receiver?.close()]);
    await hub?.close();
  });

  /** Signs in as a person does: the page sends them to sign in, they name the organization and pick the provider. */
  async function signIn(account: IdpAccount, path: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: 'Asia/Tokyo' });
    const page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${hub.url}${path}`);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    await page.getByLabel('Organization', { exact: true }).fill('acme');
    await page.getByRole('button', { name: 'Continue' }).click();
    idp.next = account;
    await page.getByRole('link', { name: 'corp' }).click();
    await page.waitForURL((u) => u.pathname === path);
    return { context, page };
  }

  const apiGet = (path: string, token: string) => hub.request('GET', path, { token });

  /** Waits until the element's text holds `expected` (contains a string, or matches), up to 5 s. */
  async function hasText(l: Locator, expected: string | RegExp, want = true): Promise<void> {
    const holds = (t: string) => (typeof expected === 'string' ? t.includes(expected) : expected.test(t));
    const deadline = Date.now() + 5000;
    let text = '';
    while (Date.now() < deadline) {
      text = (await l.textContent({ timeout: 5000 })) ?? '';
      if (holds(text) === want) return;
      await new Promise((done) => setTimeout(done, 100));
    }
    throw new Error(`expected the text ${want ? 'to' : 'not to'} hold ${String(expected)}; it is: ${text.slice(0, 500)}`);
  }
  const lacksText = (l: Locator, expected: string | RegExp) => hasText(l, expected, false);

  it('shows no page without a session: a browser is sent to sign in, a form is refused', async () => {
    const paths = [
      '/admin/',
      '/admin/users',
      '/admin/groups',
      '/admin/api-keys',
      '/admin/scim-tokens',
      '/admin/providers',
      '/admin/webhooks',
      '/admin/audit',
      '/admin/engrams',
      '/admin/packs',
      '/me/',
      '/me/api-keys',
      '/me/engrams',
      '/me/sessions',
      '/me/connect',
      '/admin/nope',
    ];
    for (const path of paths) {
      const res = await fetch(`${hub.url}${path}`, { redirect: 'manual' });
      expect(res.status, path).toBe(302);
      expect(res.headers.get('location')).toBe(`/sign-in?return_to=${encodeURIComponent(path)}`);
      const bogus = await fetch(`${hub.url}${path}`, {
        redirect: 'manual',
        headers: { authorization: 'Bearer not-a-token', cookie: 'svc_session=forged' },
      });
      expect(bogus.status, path).toBe(302);
    }
    for (const path of ['/admin/api-keys', '/me/api-keys', '/me/sign-out']) {
      const res = await fetch(`${hub.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=x',
      });
      expect(res.status, path).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/text\/html/);
    }
  });

  it('takes a Bearer header instead of a session (no cookie, so no CSRF token), with the same roles', async () => {
    const page = await fetch(`${hub.url}/admin/users`, { headers: { authorization: `Bearer ${acme.adminKey}` } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(await page.text()).toContain('<h1>Users</h1>');
    const add = await fetch(`${hub.url}/admin/users`, {
      method: 'POST',
      redirect: 'manual',
      headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=grace&role=viewer',
    });
    expect(add.status).toBe(303);
    expect(add.headers.get('location')).toBe('/admin/users?done=user-added');
    const bad = await fetch(`${hub.url}/admin/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=Not+A+Name',
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/name/);
    const viewer = await acme.user('val', 'viewer');
    expect((await fetch(`${hub.url}/admin/`, { headers: { authorization: `Bearer ${viewer.key}` } })).status).toBe(403);
    expect((await fetch(`${hub.url}/me/`, { headers: { authorization: `Bearer ${viewer.key}` } })).status).toBe(200);
    expect((await fetch(`${hub.url}/admin/users`, { method: 'PUT', headers: { authorization: `Bearer ${acme.adminKey}` } })).status).toBe(
      405,
    );
  });

  it('lets an admin in through the OIDC provider, and issue and revoke an API key by clicking', async () => {
    const { page } = admin;
    await page.goto(`${hub.url}/admin/`);
    await hasText(page.getByRole('heading', { level: 1 }), 'Overview');
    const csp = (await page.request.get(`${hub.url}/admin/`)).headers()['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');

    await page.getByRole('link', { name: 'API keys', exact: true }).click();
    await page.getByLabel(/^For user/).selectOption({ label: 'ada' });
    await page.getByLabel('Name', { exact: true }).fill('laptop');
    await page.getByRole('button', { name: 'Issue key' }).click();
    const key = (await page.locator('#new-secret').textContent())!.trim();
    expect(key).toMatch(/^svc_sk_/);
    expect((await apiGet('/me', key)).body.user.name).toBe('ada');

    await page.getByRole('link', { name: 'Back to API keys' }).click();
    await page
      .getByRole('row', { name: /laptop/ })
      .getByRole('button', { name: 'Revoke' })
      .click();
    await hasText(page.getByRole('status'), 'The API key was revoked.');
    expect((await apiGet('/me', key)).status).toBe(401);

    // Each click was the REST call it mirrors, audited as ada.
    const rows = await queryAudit(hub.db, acme.org, { actor: 'ada', limit: 500 });
    expect(rows.map((r) => r.action)).toEqual(
      expect.arrayContaining(['POST /api/v1/admin/api-keys', 'DELETE /api/v1/admin/api-keys/:id', 'GET /api/v1/admin/insights']),
    );
  });

  it('registers a webhook, sends a test event to a loopback receiver and lists the delivery', async () => {
    const { page } = admin;
    await page.goto(`${hub.url}/admin/webhooks`);
    // What a receiver must know is said where webhooks are made.
    await hasText(
      page.getByRole('region', { name: 'How deliveries behave' }).or(page.locator('section', { hasText: 'How deliveries behave' })),
      /Order is not kept[\s\S]*disabled are never sent/,
    );
    await page.getByLabel('Receiver URL', { exact: true }).fill(receiver.url);
    await page.getByLabel('pack.installed', { exact: true }).check();
    await page.getByRole('button', { name: 'Register webhook' }).click();
    receiver.secret = (await page.locator('#new-secret').textContent())!.trim();
    await page.getByRole('link', { name: 'Go to the webhook' }).click();
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await hasText(page.getByRole('status'), 'The test event was delivered.');
    expect(receiver.accepted('webhook.test')).toHaveLength(1);
    expect(receiver.accepted('webhook.test')[0]!.data).toMatchObject({ sent_by: 'ada' });
    await hasText(page.getByRole('row', { name: /webhook\.test/ }), /delivered/);

    await page.getByRole('button', { name: 'Disable' }).click();
    await hasText(page.getByRole('status'), 'The webhook was changed.');
    await page.getByRole('button', { name: 'Re-enable' }).click();
    await hasText(page.locator('dl.fields'), /active/);
  });

  it('pages through the audit log, filters it, and names the first broken row of the chain', async () => {
    for (let i = 0; i < 60; i++) await apiGet('/me', acme.adminKey);
    const { page } = admin;
    await page.goto(`${hub.url}/admin/audit`);
    await hasText(page.locator('.notice'), /The chain verifies/);
    const seqs = async () => (await page.locator('tbody tr td:first-child').allTextContents()).map(Number);
    const first = await seqs();
    expect(first).toHaveLength(50);
    expect(first[0]).toBeGreaterThan(first[49]!);
    await page.getByRole('link', { name: 'Older rows' }).click();
    const second = await seqs();
    expect(Math.max(...second)).toBeLessThan(Math.min(...first));

    await page.getByLabel('Actor', { exact: true }).fill('ada');
    await page.getByRole('button', { name: 'Filter' }).click();
    const actors = await page.locator('tbody tr td:nth-child(3)').allTextContents();
    expect(actors.length).toBeGreaterThan(0);
    expect(new Set(actors)).toEqual(new Set(['ada']));

    // Someone edits a row in the database: the page names it. (Put back afterwards.)
    const t = `"${acme.org.schema}".audit_log`;
    const was = (await hub.db.query<{ outcome: number }>(`SELECT outcome FROM ${t} WHERE seq = 5`)).rows[0]!.outcome;
    await asOwner(hub.db, acme.org, `UPDATE ${t} SET outcome = 299 WHERE seq = 5`);
    await page.goto(`${hub.url}/admin/audit`);
    await hasText(page.getByRole('alert'), /broken at row 5/);
    await asOwner(hub.db, acme.org, `UPDATE ${t} SET outcome = $1 WHERE seq = 5`, [was]);
  });

  it('lists engrams by filters, shows one with its history, and retires it after a confirmation', async () => {
    const made = await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Deploys go through the release train, never by hand', type: 'procedural', scope: 'org:acme' },
    });
    expect(made.status, made.text).toBe(201);
    const id = made.body.id as string;
    const { page } = admin;
    await page.goto(`${hub.url}/admin/engrams`);
    await page.getByLabel(/^Scope/).selectOption('org:acme');
    await page.getByLabel(/^Type/).selectOption('procedural');
    await page.getByRole('button', { name: 'List' }).click();
    await page.getByRole('link', { name: id }).click();
    await hasText(page.locator('dl.fields'), /release train/);
    await hasText(page.locator('table').last(), /create/);
    await page.getByRole('link', { name: 'Retire…' }).click();
    await hasText(page.getByRole('heading', { level: 1 }), `Retire ${id}?`);
    await page.getByRole('button', { name: 'Retire' }).click();
    await hasText(page.getByRole('status'), 'The engram was retired.');
    expect((await apiGet(`/engrams/${id}`, acme.adminKey)).body.status).toBe('retired');
    const rows = await queryAudit(hub.db, acme.org, { actor: 'ada', action: 'DELETE /api/v1/engrams/:id', limit: 5 });
    expect(rows.map((r) => r.resource)).toContain(`engram:${id}`);
  });

  it('installs a pack by upload and uninstalls it', async () => {
    await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Use UTC in every log line', type: 'behavioral', scope: 'org:acme', visibility: 'public' },
    });
    const exported = await hub.request('POST', '/packs/export', { token: acme.adminKey, body: { name: 'logging', scope: 'org:acme' } });
    expect(exported.status, exported.text).toBe(200);
    const file = join(mkdtempSync(join(tmpdir(), 'svc-ui-pack-')), 'logging.json');
    writeFileSync(file, JSON.stringify({ files: exported.body.files }));
    const { page } = admin;
    await page.goto(`${hub.url}/admin/packs`);
    await page.getByLabel(/Pack file/).setInputFiles(file);
    await page.getByLabel(/nobody this hub trusts/).check();
    await page.getByRole('button', { name: 'Install' }).click();
    await hasText(page.getByRole('heading', { level: 1 }), 'Pack logging installed');
    await page.getByRole('link', { name: 'Back to packs' }).click();
    await page
      .getByRole('row', { name: /logging/ })
      .getByRole('button', { name: 'Uninstall' })
      .click();
    await hasText(page.getByRole('status'), 'The pack was uninstalled.');
  });

  it('keeps a viewer out of /admin/ and gives them their portal', async () => {
    const { context, page } = await signIn(VIC, '/me/');
    await hasText(page.getByRole('heading', { level: 1 }), 'Signed in as vic');
    await lacksText(page.locator('nav.sections'), /Audit log/);
    const res = await page.goto(`${hub.url}/admin/`);
    expect(res!.status()).toBe(403);
    await hasText(page.getByRole('alert'), /need the admin role; vic is a viewer/);
    await page.goto(`${hub.url}/me/api-keys`);
    await page.getByLabel('Name', { exact: true }).fill('vic laptop');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect((await page.locator('#new-secret').textContent())!.trim()).toMatch(/^svc_sk_/);
    await page.goto(`${hub.url}/me/connect`);
    await hasText(page.locator('pre').first(), `svc init-remote --url ${hub.url} --token`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    const again = await page.goto(`${hub.url}/me/`);
    expect(new URL(again!.url()).pathname).toBe('/sign-in');
    await context.close();
  });

  it('refuses a form posted from another origin, and one without its token', async () => {
    // A page on another origin of the same site (so SameSite=Lax still sends the cookie).
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><title>win</title><form method="post" action="${hub.url}/me/api-keys"><input name="name" value="planted"><button>Win a prize</button></form>`,
      );
    });
    await new Promise<void>((done) => evil.listen(0, '127.0.0.1', done));
    try {
      const { page } = admin;
      await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      const [answer] = await Promise.all([
        page.waitForResponse((r) => r.url() === `${hub.url}/me/api-keys`),
        page.getByRole('button', { name: 'Win a prize' }).click(),
      ]);
      expect(answer.status()).toBe(403);

      // The same browser's cookies, no Origin header: the token decides.
      const post = (form: Record<string, string>) => page.request.post(`${hub.url}/me/api-keys`, { form, maxRedirects: 0 });
      expect((await post({ name: 'no-token' })).status()).toBe(403);
      expect((await post({ name: 'forged', _csrf: 'abc.def' })).status()).toBe(403);
      await page.goto(`${hub.url}/me/api-keys`);
      const token = await page.locator('input[name="_csrf"]').first().getAttribute('value');
      expect((await post({ name: 'real', _csrf: token! })).status()).toBe(201);
      const keys = (await apiGet('/admin/api-keys?limit=200', acme.adminKey)).body.items.map((k: { name: string }) => k.name);
      expect(keys).toContain('real');
      expect(keys).not.toContain('planted');
      expect(keys).not.toContain('no-token');
      expect(keys).not.toContain('forged');
    } finally {
      await new Promise((done) => evil.close(done));
    }
  });

  // The pages' HTML does not depend on the database: the sweep runs once, on PGlite.
  it.runIf(kind === 'pglite')(
    'passes axe on every page at desktop and phone widths, with no CSP violation and no sideways scrolling',
    async () => {
      const { context } = admin;
      await hub.request('POST', '/admin/groups', { token: acme.adminKey, body: { path: 'platform' } });
      const groups = await hub.request('POST', '/admin/groups', { token: acme.adminKey, body: { path: 'platform/payments' } });
      await hub.request('POST', `/admin/groups/${groups.body.id}/members`, { token: acme.adminKey, body: { user_id: acme.adminId } });
      const engram = (
        await hub.request('POST', '/engrams', {
          token: acme.adminKey,
          body: { statement: 'Feature flags are removed within a month of full rollout', type: 'behavioral', scope: 'org:acme' },
        })
      ).body.id;
      const hook = (
        await hub.request('POST', '/admin/webhooks', { token: acme.adminKey, body: { url: receiver.url, events: ['engram.created'] } })
      ).body.id;
      // [path, screenshot name]
      const pages: Array<[string, string]> = [
        ['/admin/', 'admin'],
        ['/admin/users', 'admin-users'],
        ['/admin/groups', 'admin-groups'],
        [`/admin/groups/${groups.body.id}`, 'admin-group'],
        ['/admin/api-keys', 'admin-api-keys'],
        ['/admin/scim-tokens', 'admin-scim-tokens'],
        ['/admin/providers', 'admin-providers'],
        ['/admin/webhooks', 'admin-webhooks'],
        [`/admin/webhooks/${hook}`, 'admin-webhook'],
        ['/admin/audit', 'admin-audit'],
        ['/admin/engrams', 'admin-engrams'],
        [`/admin/engrams/${engram}`, 'admin-engram'],
        [`/admin/engrams/${engram}/pin`, 'admin-engram-pin'],
        ['/admin/packs', 'admin-packs'],
        ['/me/', 'me'],
        ['/me/api-keys', 'me-api-keys'],
        ['/me/engrams', 'me-engrams'],
        ['/me/sessions', 'me-sessions'],
        ['/me/connect', 'me-connect'],
      ];
      const page = await context.newPage();
      const cspErrors: string[] = [];
      // No console error at all: a missing favicon is one on every page.
      const consoleErrors: string[] = [];
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
        if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
      });
      // One load per page, checked at each width in turn: a width is a viewport, and the layout
      // follows it without a reload (the pages' script does not read the width).
      for (const [path, name] of pages) {
        await page.setViewportSize({ width: WIDTHS[0].width, height: WIDTHS[0].height });
        const res = await page.goto(`${hub.url}${path}`);
        expect(res!.status(), path).toBe(200);
        // The script ran: dates are in the viewer's time zone (Tokyo here), the UTC text replaced.
        const times = page.locator('time[datetime]');
        if ((await times.count()) > 0) expect(await times.first().textContent(), path).not.toMatch(/UTC$/);
        for (const w of WIDTHS) {
          await page.setViewportSize({ width: w.width, height: w.height });
          const violations = await seriousViolations(page);
          expect(violations, `${path} at ${w.name}: ${JSON.stringify(violations)}`).toEqual([]);
          const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
          expect(overflow, `${path} scrolls sideways at ${w.name}`).toBeLessThanOrEqual(1);
          await screenshot(page, kind, `${name}-${w.name}`);
        }
      }
      const anonymous = await browser.newPage();
      await anonymous.goto(`${hub.url}/sign-in?org=acme`);
      expect(await seriousViolations(anonymous)).toEqual([]);
      await screenshot(anonymous, kind, 'sign-in');
      await anonymous.close();
      expect(cspErrors).toEqual([]);
      expect(consoleErrors).toEqual([]);
      const icon = await fetch(`${hub.url}/favicon.ico`);
      expect([icon.status, icon.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    },
    180_000,
  );
});
