import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// Single-use sign-in links and invitations opened in a browser, over real HTTP: the way in
// before any identity provider exists (issue 27 items 1 and 3).

/** The session cookie a Set-Cookie header carries, as a Cookie header. */
const sessionCookie = (headers: Headers): string => {
  const set = headers.getSetCookie().find((c) => c.startsWith('svc_session='));
  if (!set) throw new Error(`no session cookie in ${headers.getSetCookie().join(' | ')}`);
  return set.split(';')[0]!;
};

describe.each(DATABASES)('sign-in links and invitations in a browser (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  /** A form post as the hub's own page sends it. */
  const press = (path: string, extra: Record<string, string> = {}) =>
    fetch(`${hub.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: hub.url, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded', ...extra },
    });
  const audit = async (action: string) =>
    (
      await hub.db.query<{ actor: string; details: Record<string, unknown> }>(
        `SELECT actor, details FROM ${ident(acme.org.schema)}.audit_log WHERE action = $1 ORDER BY seq`,
        [action],
      )
    ).rows;

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('a sign-in link signs one browser in as its person, once, lands an admin on /admin/, and is audited', async () => {
    const made = await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: {}, template: '/admin/login-links' });
    expect(made.status, made.text).toBe(201);
    expect(made.body).toMatchObject({
      user: { name: 'admin' },
      emailed: false,
      path: expect.stringMatching(/^\/sign-in\/link\//),
      url: `${hub.url}${made.body.path}`,
    });
    // Only the secret's hash is stored.
    const secret = made.body.path.split('.').pop();
    const stored = await hub.db.query<{ secret_hash: string; created_by: string }>(
      `SELECT secret_hash, created_by FROM ${ident(acme.org.schema)}.login_links WHERE id = $1`,
      [made.body.id],
    );
    expect(stored.rows[0]!.created_by).toBe('admin');
    expect(stored.rows[0]!.secret_hash).not.toContain(secret);

    const page = await fetch(made.body.url);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/Sign in as admin/);
    // Looking at the page spends nothing; another site's form is refused.
    expect((await press(made.body.path, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    const signed = await press(made.body.path);
    expect(signed.status).toBe(303);
    expect(signed.headers.get('location')).toBe('/admin/');
    const cookie = sessionCookie(signed.headers);
    const session = await fetch(`${hub.url}/auth/session`, { headers: { cookie } });
    expect(await session.json()).toMatchObject({ user: { name: 'admin' }, role: 'admin', org: { slug: 'acme' } });
    expect((await fetch(`${hub.url}/admin/`, { headers: { cookie }, redirect: 'manual' })).status).toBe(200);

    // Used: refused, with a page that says so and how to get another.
    for (const again of [await press(made.body.path), await fetch(made.body.url)]) {
      expect(again.status).toBe(410);
      const text = await again.text();
      expect(text).toMatch(/used already/);
      expect(text).toMatch(/svc hub login-link --org acme/);
      expect(again.headers.getSetCookie().some((c) => c.startsWith('svc_session='))).toBe(false);
    }
    const logins = await audit('auth.login');
    expect(logins.at(-1)).toMatchObject({
      actor: 'admin',
      details: { via: 'sign-in link', link_id: made.body.id, link_created_by: 'admin' },
    });
    expect((await audit('POST /api/v1/admin/login-links')).at(-1)).toMatchObject({
      actor: 'admin',
      details: { link_id: made.body.id, user: 'admin', emailed: false },
    });
  });

  it('an expired link and an unknown one are refused with a clear page', async () => {
    const made = await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: { user: 'admin' } });
    expect(made.status).toBe(201);
    await hub.db.query(`UPDATE ${ident(acme.org.schema)}.login_links SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      made.body.id,
    ]);
    const expired = await press(made.body.path);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toMatch(/has expired: a link works for 10 minutes/);
    const unknown = await fetch(`${hub.url}/sign-in/link/${acme.org.id}.${'A'.repeat(43)}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toMatch(/not known here/);
    expect((await fetch(`${hub.url}/sign-in/link/nonsense`)).status).toBe(404);
  });

  it('links for others: shown for someone who never signed in (landing on /me/), refused for one who did without e-mail, never for a service account', async () => {
    await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'nora', role: 'viewer' } });
    const nora = await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: { user: 'nora' } });
    expect(nora.status, nora.text).toBe(201);
    const signed = await press(nora.body.path);
    expect(signed.headers.get('location')).toBe('/me/');
    // Nora has signed in now: a link that acts as her goes only to her own address.
    const again = await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: { user: 'nora' } });
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/goes only to their own e-mail address.*SVC_HUB_SMTP_URL/);
    await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'ci', role: 'editor', kind: 'service' } });
    const svcAccount = await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: { user: 'ci' } });
    expect(svcAccount.status).toBe(400);
    expect(svcAccount.body.detail).toMatch(/service account/);
    expect((await hub.request('POST', '/admin/login-links', { token: acme.adminKey, body: { user: 'ghost' } })).body.detail).toMatch(
      /no user ghost/,
    );
    const editor = await acme.user('eddie', 'editor');
    expect((await hub.request('POST', '/admin/login-links', { token: editor.key, body: {} })).status).toBe(403);
  });

  it('the people page hands an admin a sign-in link for someone who never signed in, and says why not for someone who did', async () => {
    await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'pia', role: 'editor' } });
    const page = (path: string) =>
      fetch(`${hub.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/x-www-form-urlencoded' },
      });
    const shown = await page('/admin/users/pia/login-link');
    expect(shown.status).toBe(201);
    const linkPattern = new RegExp(`${hub.url}/sign-in/link/[0-9a-f-]{36}\\.[A-Za-z0-9_-]{43}`);
    const text = await shown.text();
    expect(text).toMatch(linkPattern);
    const url = linkPattern.exec(text)![0];
    expect((await press(new URL(url!).pathname)).headers.get('location')).toBe('/me/');
    const refused = await page('/admin/users/pia/login-link');
    expect(refused.status).toBe(409);
    expect(await refused.text()).toMatch(/goes only to their own e-mail address/);
  });

  it('an invitation by e-mail address creates the person in a group; opened in a browser it signs them in and shows their first key once', async () => {
    await hub.request('POST', '/admin/groups', { token: acme.adminKey, body: { path: 'eng' } });
    const inv = await hub.request('POST', '/admin/invitations', {
      token: acme.adminKey,
      body: { email: 'dan@example.com', group: 'eng' },
      template: '/admin/invitations',
    });
    expect(inv.status, inv.text).toBe(201);
    expect(inv.body).toMatchObject({
      user: { name: 'dan', email: 'dan@example.com', created: true },
      emailed: false,
      path: expect.stringMatching(/^\/invite\/svc_inv_/),
    });
    expect(
      (await hub.request('GET', '/admin/groups/eng/members', { token: acme.adminKey })).body.items.map((m: { name: string }) => m.name),
    ).toContain('dan');
    const page = await fetch(inv.body.url);
    expect(await page.text()).toMatch(/invited to the team memory of <strong>acme<\/strong> as <strong>dan<\/strong>/);
    const accepted = await press(inv.body.path);
    expect(accepted.status).toBe(201);
    const acceptedText = await accepted.text();
    expect(acceptedText).toMatch(/svc_sk_[A-Za-z0-9_-]{20,}/);
    const key = /svc_sk_[A-Za-z0-9_-]+/.exec(acceptedText)![0];
    const me = await hub.request('GET', '/me', { token: key! });
    expect(me.body).toMatchObject({ user: { name: 'dan' }, role: 'editor' });
    expect(me.body.scopes.writable).toContain('group:eng');
    const cookie = sessionCookie(accepted.headers);
    expect(await (await fetch(`${hub.url}/auth/session`, { headers: { cookie } })).json()).toMatchObject({ user: { name: 'dan' } });
    const twice = await press(inv.body.path);
    expect(twice.status).toBe(410);
    expect(await twice.text()).toMatch(/unknown, already used or expired/);
    // Dan has had access now: the existing rule refuses a second invitation, by name or address.
    for (const body of [{ user_id: 'dan' }, { email: 'DAN@example.com' }]) {
      const refused = await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(/dan has had a key or a sign-in already/);
    }
    expect((await audit('invitation.accept')).at(-1)).toMatchObject({ actor: 'dan', details: { via: 'browser' } });
  });

  it('names people by user name everywhere: invitations, group members, keys', async () => {
    await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'bob', role: 'editor' } });
    expect((await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: { user_id: 'bob' } })).status).toBe(201);
    expect((await hub.request('POST', '/admin/groups/eng/members', { token: acme.adminKey, body: { user_id: 'bob' } })).status).toBe(200);
    expect((await hub.request('DELETE', '/admin/groups/eng/members/bob', { token: acme.adminKey })).status).toBe(204);
    const badEmail = await hub.request('POST', '/admin/invitations', {
      token: acme.adminKey,
      body: { email: 'x@example.com\r\nBcc: evil@example.com' },
    });
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.detail).toMatch(/is not a plain address/);
    expect(
      (await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: { email: 'zed@example.com', group: 'nope' } })).body
        .detail,
    ).toMatch(/no group nope/);
    expect((await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: {} })).status).toBe(400);
  });
});
