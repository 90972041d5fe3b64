import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { signJwt } from '../access/tokens.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

describe.each(DATABASES)('identity and admin routes (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind, { jwt: { current: 'current-secret-0123456789abcdef', previous: 'previous-secret-0123456789abcdef' } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('GET /me resolves scopes through nested groups: readable first, writable second', async () => {
    const dana = await acme.user('dana', 'editor', [{ path: 'eng/backend/db' }, { path: 'sales', readOnly: true }]);
    const me = await hub.request('GET', '/me', { token: dana.key, template: '/me' });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ user: { name: 'dana' }, org: { slug: 'acme' }, role: 'editor', token: { kind: 'api_key' } });
    expect(me.body.scopes.readable).toEqual([
      'user:dana',
      'group:eng',
      'group:eng/backend',
      'group:eng/backend/db',
      'group:sales',
      'org:acme',
      'global',
    ]);
    expect(me.body.scopes.writable).toEqual(['user:dana', 'group:eng/backend/db']);
    const vic = await acme.user('vic', 'viewer', [{ path: 'eng' }]);
    expect((await hub.request('GET', '/me', { token: vic.key })).body.scopes.writable).toEqual([]);
  });

  it('accepts hub JWTs signed with the current or the previous secret, refuses others and expired ones', async () => {
    const claims = { sub: acme.adminId, org: acme.org.id, jti: randomUUID(), ver: 0 };
    for (const current of ['current-secret-0123456789abcdef', 'previous-secret-0123456789abcdef']) {
      const token = await signJwt({ current }, claims);
      const me = await hub.request('GET', '/me', { token, template: '/me' });
      expect(me.status, current).toBe(200);
      expect(me.body.token).toEqual({ id: claims.jti, kind: 'jwt' });
    }
    expect(
      (await hub.request('GET', '/me', { token: await signJwt({ current: 'some-other-secret-0123456789' }, claims), template: '/me' }))
        .status,
    ).toBe(401);
    expect(
      (
        await hub.request('GET', '/me', {
          token: await signJwt({ current: 'current-secret-0123456789abcdef' }, claims, -10),
          template: '/me',
        })
      ).status,
    ).toBe(401);
    expect((await hub.request('GET', '/me', { token: 'a.b.c', template: '/me' })).status).toBe(401);
    const bad = await hub.request('GET', '/me', { headers: { authorization: 'Basic Zm9vOmJhcg==' }, template: '/me' });
    expect(bad.status).toBe(401);
    expect(bad.body.detail).toMatch(/Bearer/);
  });

  it('provisions users, groups and members; issues, lists and revokes API keys (admin only)', async () => {
    const admin = acme.adminKey;
    const u = await hub.request('POST', '/admin/users', {
      token: admin,
      body: { name: 'zoe', email: 'zoe@example.com', role: 'viewer' },
      template: '/admin/users',
    });
    expect(u.status).toBe(201);
    expect(u.body).toMatchObject({ name: 'zoe', role: 'viewer', active: true });
    expect((await hub.request('POST', '/admin/users', { token: admin, body: { name: 'zoe' }, template: '/admin/users' })).status).toBe(409);
    expect(
      (await hub.request('POST', '/admin/users', { token: admin, body: { name: 'Zoe Upper', role: 'boss' }, template: '/admin/users' }))
        .status,
    ).toBe(400);
    const users = await hub.request('GET', '/admin/users?limit=2', { token: admin, template: '/admin/users' });
    expect(users.body.items).toHaveLength(2);
    expect(users.body.next_cursor).toEqual(expect.any(String));
    const g = await hub.request('POST', '/admin/groups', { token: admin, body: { path: 'ops' }, template: '/admin/groups' });
    expect(g.status).toBe(201);
    expect(g.body).toMatchObject({ path: 'ops', scope: 'group:ops', members: 0 });
    expect((await hub.request('POST', '/admin/groups', { token: admin, body: { path: 'x/y' }, template: '/admin/groups' })).status).toBe(
      400,
    );
    const m = await hub.request('POST', `/admin/groups/${g.body.id}/members`, {
      token: admin,
      body: { user_id: u.body.id },
      template: '/admin/groups/{id}/members',
    });
    expect(m.status).toBe(200);
    expect(m.body.group.members).toBe(1);
    expect(
      (
        await hub.request('POST', `/admin/groups/${randomUUID()}/members`, {
          token: admin,
          body: { user_id: u.body.id },
          template: '/admin/groups/{id}/members',
        })
      ).status,
    ).toBe(404);
    expect(
      (await hub.request('GET', '/admin/groups', { token: admin, template: '/admin/groups' })).body.items.map(
        (x: { path: string }) => x.path,
      ),
    ).toContain('ops');

    // zoe is a person: she redeems an invitation for her key; nobody mints it for her.
    expect(
      (
        await hub.request('POST', '/admin/api-keys', {
          token: admin,
          body: { user_id: u.body.id, name: 'ci' },
          template: '/admin/api-keys',
        })
      ).status,
    ).toBe(403);
    const inv = await hub.request('POST', '/admin/invitations', {
      token: admin,
      body: { user_id: u.body.id },
      template: '/admin/invitations',
    });
    expect(inv.status).toBe(201);
    const k = await hub.request('POST', '/invitations/redeem', {
      body: { token: inv.body.token, key_name: 'ci' },
      template: '/invitations/redeem',
    });
    expect(k.status).toBe(201);
    expect(k.body.key).toMatch(/^svc_sk_[A-Za-z0-9_-]{43}$/);
    const zoe = k.body.key;
    const me = await hub.request('GET', '/me', { token: zoe });
    expect(me.body.scopes.readable).toContain('group:ops');
    const listed = await hub.request('GET', '/admin/api-keys', { token: admin, template: '/admin/api-keys' });
    expect(listed.body.items.some((x: { id: string; key?: string }) => x.id === k.body.id && x.key === undefined)).toBe(true);
    expect(listed.text).not.toContain(zoe);
    expect((await hub.request('GET', '/admin/users', { token: zoe, template: '/admin/users' })).status).toBe(403);
    const revoked = await hub.request('DELETE', `/admin/api-keys/${k.body.id}`, { token: admin, template: '/admin/api-keys/{id}' });
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expect((await hub.request('GET', '/me', { token: zoe })).status).toBe(401);
    expect(
      (await hub.request('DELETE', `/admin/api-keys/${randomUUID()}`, { token: admin, template: '/admin/api-keys/{id}' })).status,
    ).toBe(404);
  });

  it('queries the audit log and reports insights', async () => {
    await hub.request('POST', '/engrams', { token: acme.adminKey, body: { statement: 'Audit me please', scope: 'org:acme' } });
    await hub.running.hub.audit.drain();
    const a = await hub.request('GET', '/admin/audit?action=POST%20%2Fapi%2Fv1%2Fengrams', {
      token: acme.adminKey,
      template: '/admin/audit',
    });
    expect(a.status).toBe(200);
    expect(a.body.items.length).toBeGreaterThan(0);
    expect(a.body.items[0]).toMatchObject({ actor: 'admin', action: 'POST /api/v1/engrams', outcome: 201 });
    expect(a.body.items[0].resource).toMatch(/^engram:ENG-/);
    const page = await hub.request('GET', '/admin/audit?limit=1', { token: acme.adminKey, template: '/admin/audit' });
    const next = await hub.request('GET', `/admin/audit?limit=1&cursor=${page.body.next_cursor}`, {
      token: acme.adminKey,
      template: '/admin/audit',
    });
    expect(next.body.items[0].seq).toBe(page.body.items[0].seq + 1);
    const i = await hub.request('GET', '/admin/insights', { token: acme.adminKey, template: '/admin/insights' });
    expect(i.body).toMatchObject({ engrams: expect.any(Number), by_status: { active: expect.any(Number) } });
    expect(i.body.never_used).toBeGreaterThanOrEqual(1);
  });
});
