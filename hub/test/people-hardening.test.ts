import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createInvitation, deleteUser, freeUserName, issueApiKey, mayLinkByEmail, updateUser } from '../access/identity.js';
import { createSession } from '../login/login-sessions.js';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type Reply, type TestHub, type TestOrg } from './support/hub-fixture.js';

// Issue 25 (people, invitations, SCIM): one way to end a person's access, whatever surface asks;
// never without an active admin; invitations only for people who never had access; SCIM changes
// only the people it provisioned, one address per person; bounded SCIM PATCH work; SCIM under the
// rate limiter; the audit's own name reserved; users named by id or name.

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const patch = (...Operations: unknown[]) => ({ schemas: [PATCH], Operations });

describe.each(DATABASES)('people hardening (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let scimToken: string;

  const scim = (method: string, path: string, body?: unknown, token = scimToken): Promise<Reply> =>
    hub.request(method, `//scim/v2${path}`, {
      token,
      ...(body !== undefined ? { body, headers: { 'content-type': 'application/scim+json' } } : {}),
    });
  const expectScimError = (r: Reply, status: number, scimType?: string) => {
    expect(r.status, r.text).toBe(status);
    expect(r.body.schemas).toEqual([ERROR]);
    expect(r.body.status).toBe(String(status));
    if (scimType) expect(r.body.scimType).toBe(scimType);
  };
  const newScimToken = async (org: TestOrg, name: string): Promise<string> => {
    const r = await hub.request('POST', '/admin/scim-tokens', { token: org.adminKey, body: { name } });
    expect(r.status, r.text).toBe(201);
    return r.body.token;
  };
  const scimUser = async (userName: string, extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await scim('POST', '/Users', { schemas: [USER], userName, ...extra });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  };
  const restUser = async (name: string, role = 'editor', email?: string): Promise<string> => {
    const r = await hub.request('POST', '/admin/users', {
      token: acme.adminKey,
      body: { name, role, ...(email ? { email } : {}) },
      template: '/admin/users',
    });
    expect(r.status, r.text).toBe(201);
    return r.body.id;
  };

  /** Every kind of access a person can hold: a key, a browser session, an OAuth grant, an MCP session, a pending invitation. */
  async function access(userId: string) {
    const invitation = await createInvitation(hub.db, acme.org, userId, 'admin');
    const { key } = await issueApiKey(hub.db, acme.org, userId, 'laptop');
    const browser = (await hub.db.transaction((q) => createSession(q, acme.org, userId))).cookie;
    await hub.db.transaction((q) => createSession(q, acme.org, userId, { clientId: 'some-mcp-client' }));
    const init = await fetch(`${hub.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    expect(init.status, await init.text()).toBe(200);
    const mcp = init.headers.get('mcp-session-id')!;
    const held = { key, browser, mcp, invitation: invitation.token };
    expect(await works(held)).toEqual({ key: 200, browser: 200, mcp: 200 });
    return held;
  }

  async function works(held: { key: string; browser: string; mcp: string }) {
    const key = (await hub.request('GET', '/me', { token: held.key })).status;
    const browser = (await hub.request('GET', '//auth/session', { headers: { cookie: `svc_session=${held.browser}` } })).status;
    const mcp = (
      await fetch(`${hub.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${held.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': held.mcp,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      })
    ).status;
    return { key, browser, mcp };
  }

  /** Nothing of the person's works any more, and the database says every grant and session ended. */
  async function expectEnded(userId: string, held: Awaited<ReturnType<typeof access>>) {
    expect(await works(held)).toEqual({ key: 401, browser: 401, mcp: 401 });
    const s = ident(acme.org.schema);
    const open = await hub.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM ${s}.login_sessions WHERE user_id = $1 AND revoked_at IS NULL)
            + (SELECT count(*) FROM ${s}.mcp_sessions WHERE user_id = $1 AND closed_at IS NULL)
            + (SELECT count(*) FROM ${s}.invitations WHERE user_id = $1 AND redeemed_at IS NULL)
            + (SELECT count(*) FROM ${s}.api_keys WHERE user_id = $1 AND revoked_at IS NULL) AS n`,
      [userId],
    );
    expect(Number(open.rows[0]!.n)).toBe(0);
    expect((await hub.request('POST', '/invitations/redeem', { body: { token: held.invitation } })).status).toBe(400);
  }

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    scimToken = await newScimToken(acme, 'entra');
  }, 60_000);
  afterAll(async () => hub?.close());

  describe('one way to end access', () => {
    it('REST PATCH active=false ends keys, browser sessions, grants, MCP sessions and invitations at once', async () => {
      const id = await restUser('pat');
      const held = await access(id);
      const r = await hub.request('PATCH', `/admin/users/${id}`, {
        token: acme.adminKey,
        body: { active: false },
        template: '/admin/users/{id}',
      });
      expect(r.status, r.text).toBe(200);
      await expectEnded(id, held);
    });

    it('REST DELETE (by name) ends every access and hides the user from SCIM', async () => {
      const id = await scimUser('del@contoso.com', { emails: [{ value: 'del@contoso.com', primary: true }] });
      const held = await access(id);
      const r = await hub.request('DELETE', '/admin/users/del-contoso.com', { token: acme.adminKey, template: '/admin/users/{id}' });
      expect(r.status, r.text).toBe(204);
      await expectEnded(id, held);
      expect((await scim('GET', `/Users/${id}`)).status).toBe(404);
      expect((await hub.request('DELETE', `/admin/users/${id}`, { token: acme.adminKey })).status).toBe(404);
      expect((await hub.request('DELETE', `/admin/users/${acme.adminId}`, { token: acme.adminKey })).status).toBe(400);
      const audit = await hub.request('GET', `/admin/audit?resource=${encodeURIComponent(`user:${id}`)}`, { token: acme.adminKey });
      expect(audit.body.items.find((a: { action: string }) => a.action === 'DELETE /api/v1/admin/users/:id').details).toMatchObject({
        mode: 'delete',
        api_keys: 1,
        sessions: 1,
        oauth_grants: 1,
        mcp_sessions: 1,
        invitations: 1,
      });
    });

    it("the admin UI's Deactivate button (through REST) ends every access at once", async () => {
      const id = await restUser('clicked');
      const held = await access(id);
      const r = await fetch(`${hub.url}/admin/users/${id}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'active=false',
      });
      expect(r.status).toBe(303);
      expect(r.headers.get('location')).toBe('/admin/users?done=user-changed');
      await expectEnded(id, held);
    });

    for (const how of ['PATCH', 'PUT', 'DELETE'] as const) {
      it(`SCIM ${how} (deactivating or deleting) ends every access at once`, async () => {
        const id = await scimUser(`scim-${how.toLowerCase()}@contoso.com`);
        const held = await access(id);
        const r =
          how === 'PATCH'
            ? await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'active', value: false }))
            : how === 'PUT'
              ? await scim('PUT', `/Users/${id}`, { schemas: [USER], userName: `scim-put@contoso.com`, active: false })
              : await scim('DELETE', `/Users/${id}`);
        expect(r.status, r.text).toBe(how === 'DELETE' ? 204 : 200);
        await expectEnded(id, held);
      });
    }
  });

  describe('the last admin', () => {
    it('no path removes, deactivates or demotes the last active admin; svc hub org admin add is the way back (hub-cli.test.ts)', async () => {
      const org = await hub.newOrg('solo');
      const token = await newScimToken(org, 'idp');
      const idp = (m: string, p: string, b?: unknown) => scim(m, p, b, token);
      // A person SCIM provisioned, made admin through REST; the first admin then leaves.
      const boss = (await idp('POST', '/Users', { schemas: [USER], userName: 'boss@solo.test' })).body.id;
      expect((await hub.request('PATCH', `/admin/users/${boss}`, { token: org.adminKey, body: { role: 'admin' } })).status).toBe(200);
      const { key: bossKey } = await issueApiKey(hub.db, org.org, boss, 'k');
      expect((await hub.request('PATCH', '/admin/users/admin', { token: bossKey, body: { active: false } })).status).toBe(200);

      const refused = [
        await idp('DELETE', `/Users/${boss}`),
        await idp('PATCH', `/Users/${boss}`, patch({ op: 'replace', path: 'active', value: false })),
        await idp('PUT', `/Users/${boss}`, { schemas: [USER], userName: 'boss@solo.test', active: false }),
      ];
      for (const r of refused) {
        expectScimError(r, 409);
        expect(r.body.detail).toMatch(/last active admin of solo/);
      }
      await expect(updateUser(hub.db, org.org, boss, { role: 'editor' })).rejects.toThrow(
        /cannot make editor boss-solo.test: they are the last active admin of solo/,
      );
      await expect(updateUser(hub.db, org.org, 'boss-solo.test', { active: false })).rejects.toThrow(/last active admin/);
      await expect(deleteUser(hub.db, org.org, boss)).rejects.toThrow(/last active admin/);
      expect((await hub.request('GET', '/me', { token: bossKey })).body.role).toBe('admin');
      // With a second admin, the first may go.
      expect((await hub.request('PATCH', '/admin/users/admin', { token: bossKey, body: { active: true } })).status).toBe(200);
      expect((await idp('PATCH', `/Users/${boss}`, patch({ op: 'replace', path: 'active', value: false }))).status).toBe(200);
    });

    it('two admins demoting each other at once leave one admin: one wins, the other is refused', async () => {
      const org = await hub.newOrg('pair');
      const other = await org.user('other', 'admin');
      const [a, b] = await Promise.all([
        hub.request('PATCH', `/admin/users/${other.id}`, { token: org.adminKey, body: { role: 'viewer' } }),
        hub.request('PATCH', '/admin/users/admin', { token: other.key, body: { role: 'viewer' } }),
      ]);
      // The loser is refused either as no admin any more (403, when it is resolved after the
      // winner committed) or by the last-admin check (409, when both passed the gate at once).
      const statuses = [a.status, b.status].sort();
      expect(statuses[0]).toBe(200);
      expect([403, 409]).toContain(statuses[1]);
      const loser = [a, b].find((r) => r.status !== 200)!;
      if (loser.status === 409) expect(loser.body.detail).toMatch(/last active admin of pair/);
      const admins = await hub.db.query(`SELECT name FROM ${ident(org.org.schema)}.users WHERE role = 'admin' AND active`);
      expect(admins.rows).toHaveLength(1);
      // Below the gate, two transactions at once: the admin rows' lock lets exactly one through.
      const third = await org.user('third', 'admin');
      const left = (admins.rows[0] as { name: string }).name;
      const both = await Promise.allSettled([
        updateUser(hub.db, org.org, left, { active: false }),
        updateUser(hub.db, org.org, third.id, { role: 'editor' }),
      ]);
      expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(String((both.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(/last active admin of pair/);
    });
  });

  describe('invitations', () => {
    it('are only for a person who never had access, by id or name, and the redemption is audited with the invitation', async () => {
      const carol = await acme.user('carol', 'editor');
      const refused = await hub.request('POST', '/admin/invitations', {
        token: acme.adminKey,
        body: { user_id: carol.id },
        template: '/admin/invitations',
      });
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toMatch(/ask carol to create a key in \/me\//);
      expect((await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: { user_id: 'carol' } })).status).toBe(409);
      // Someone who signed in once (a browser session) is refused too.
      const sid = await restUser('sigrid');
      await hub.db.transaction((q) => createSession(q, acme.org, sid));
      expect((await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: { user_id: 'sigrid' } })).status).toBe(409);

      const dave = await restUser('dave');
      const inv = await hub.request('POST', '/admin/invitations', {
        token: acme.adminKey,
        body: { user_id: 'dave' },
        template: '/admin/invitations',
      });
      expect(inv.status, inv.text).toBe(201);
      expect(inv.body.user_id).toBe(dave);
      const redeemed = await hub.request('POST', '/invitations/redeem', { body: { token: inv.body.token } });
      expect(redeemed.status).toBe(201);
      const audit = await hub.request(
        'GET',
        `/admin/audit?action=${encodeURIComponent('POST /api/v1/invitations/redeem')}&resource=${encodeURIComponent(`api_key:${redeemed.body.id}`)}`,
        { token: acme.adminKey },
      );
      expect(audit.body.items).toHaveLength(1);
      expect(audit.body.items[0]).toMatchObject({
        actor: 'dave',
        details: { invitation_id: inv.body.id, user_id: dave, redeemed_by: 'dave' },
      });

      // An invitation made while erin had nothing is void once she has a key of her own.
      const erin = await restUser('erin');
      const early = await hub.request('POST', '/admin/invitations', { token: acme.adminKey, body: { user_id: erin } });
      await issueApiKey(hub.db, acme.org, erin, 'her own');
      expect((await hub.request('POST', '/invitations/redeem', { body: { token: early.body.token } })).status).toBe(400);
    });
  });

  describe('SCIM and the people it did not provision', () => {
    it('refuses to change, deactivate or delete a person the hub made (403), but lists them', async () => {
      expect((await scim('GET', `/Users/${acme.adminId}`)).status).toBe(200);
      const attempts = [
        await scim(
          'PATCH',
          `/Users/${acme.adminId}`,
          patch({ op: 'replace', path: 'emails', value: [{ value: 'attacker@evil.test', primary: true }] }),
        ),
        await scim('PUT', `/Users/${acme.adminId}`, {
          schemas: [USER],
          userName: 'admin',
          emails: [{ value: 'attacker@evil.test', primary: true }],
        }),
        await scim('PATCH', `/Users/${acme.adminId}`, patch({ op: 'replace', path: 'active', value: false })),
        await scim('DELETE', `/Users/${acme.adminId}`),
      ];
      for (const r of attempts) {
        expectScimError(r, 403);
        expect(r.body.detail).toMatch(/not provisioned through SCIM/);
      }
      const row = await hub.db.query<{ email: string | null; active: boolean }>(
        `SELECT email, active FROM ${ident(acme.org.schema)}.users WHERE id = $1`,
        [acme.adminId],
      );
      expect(row.rows[0]).toEqual({ email: null, active: true });
    });

    it('keeps e-mail addresses unique per organization, in any case, on every path', async () => {
      await restUser('owner', 'editor', 'Owner@Acme.test');
      expect(
        (await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'owner2', email: 'owner@acme.test' } })).status,
      ).toBe(409);
      expectScimError(
        await scim('POST', '/Users', { schemas: [USER], userName: 'clash@x', emails: [{ value: 'OWNER@acme.test', primary: true }] }),
        409,
        'uniqueness',
      );
      const id = await scimUser('moves@acme.test', { emails: [{ value: 'moves@acme.test', primary: true }] });
      expectScimError(
        await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'emails', value: [{ value: 'owner@ACME.test', primary: true }] })),
        409,
        'uniqueness',
      );
    });

    it('marks an address SCIM changed, so sign-in never links an account by it', async () => {
      const id = await scimUser('linkable@acme.test', { emails: [{ value: 'linkable@acme.test', primary: true }] });
      const flag = async () =>
        (
          await hub.db.query<{ email_scim_changed_at: string | null }>(
            `SELECT email_scim_changed_at FROM ${ident(acme.org.schema)}.users WHERE id = $1`,
            [id],
          )
        ).rows[0]!;
      expect(mayLinkByEmail(await flag())).toBe(true);
      // Other attributes, and the same address in another case, change nothing.
      expect(
        (
          await scim(
            'PATCH',
            `/Users/${id}`,
            patch(
              { op: 'replace', path: 'title', value: 'CTO' },
              { op: 'replace', path: 'emails[primary eq true].value', value: 'LINKABLE@acme.test' },
            ),
          )
        ).status,
      ).toBe(200);
      expect(mayLinkByEmail(await flag())).toBe(true);
      expect(
        (await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'emails[primary eq true].value', value: 'elsewhere@acme.test' })))
          .status,
      ).toBe(200);
      expect(mayLinkByEmail(await flag())).toBe(false);
    });
  });

  it('migration org/018 on an existing organization: SCIM-made users found in the audit chain, duplicate addresses left to the oldest user', async () => {
    const old = await hub.newOrg('before-018');
    const token = await newScimToken(old, 'idp');
    const made = await scim('POST', '/Users', { schemas: [USER], userName: 'from-idp@old.test' }, token);
    expect(made.status).toBe(201);
    const first = (await hub.request('POST', '/admin/users', { token: old.adminKey, body: { name: 'first', email: 'Same@old.test' } })).body
      .id;
    const second = (await hub.request('POST', '/admin/users', { token: old.adminKey, body: { name: 'second' } })).body.id;
    const s = ident(old.org.schema);
    await hub.db.exec(`
      DROP INDEX ${s}.users_email_lower;
      ALTER TABLE ${s}.users DROP COLUMN provisioned_by, DROP COLUMN email_scim_changed_at;
      DELETE FROM ${s}.schema_migrations WHERE version = 18;`);
    await hub.db.query(`UPDATE ${s}.users SET email = 'same@OLD.test' WHERE id = $1`, [second]);
    const { migrateHub } = await import('../data/migrate.js');
    expect((await migrateHub(hub.db)).orgs['before-018']).toBe(1);
    const rows = (
      await hub.db.query<{ id: string; email: string | null; provisioned_by: string | null }>(
        `SELECT id, email, provisioned_by FROM ${s}.users`,
      )
    ).rows;
    const by = (id: string) => rows.find((r) => r.id === id)!;
    expect(by(made.body.id).provisioned_by).toBe('scim');
    expect(by(first)).toMatchObject({ email: 'Same@old.test', provisioned_by: null });
    expect(by(second).email).toBeNull();
    expect(by(old.adminId).provisioned_by).toBeNull();
  });

  describe('bounded SCIM PATCH work', () => {
    it('refuses the 1,000-operation filtered PATCH on a user of 12,000 addresses with a 400 naming the cap, while /health answers', async () => {
      const id = await scimUser('hoarder@acme.test');
      // As stored before the caps existed.
      const emails = Array.from({ length: 12_000 }, (_, i) => ({ value: `a${i}@hoard.test`, type: 'work' }));
      await hub.db.query(`UPDATE ${ident(acme.org.schema)}.users SET scim = scim || $2::jsonb WHERE id = $1`, [
        id,
        JSON.stringify({ emails }),
      ]);
      const ops = Array.from({ length: 1000 }, (_, i) => ({
        op: 'replace',
        path: `emails[value eq "a${i}@hoard.test" or type eq "home"].display`,
        value: `x${i}`,
      }));
      const body = patch(...ops);
      expect(JSON.stringify(body).length).toBeGreaterThan(100_000);
      const [big, health] = await Promise.all([scim('PATCH', `/Users/${id}`, body), fetch(`${hub.url}/health`)]);
      expect(health.status).toBe(200);
      expectScimError(big, 400, 'tooMany');
      expect(big.body.detail).toMatch(/at most 100 /);

      // Within the operation cap, the work cap: 100 operations over 12,000 values.
      const hundred = await scim('PATCH', `/Users/${id}`, patch(...ops.slice(0, 100)));
      expectScimError(hundred, 400, 'tooMany');
      expect(hundred.body.detail).toMatch(/more than 200000 attribute values/);
      // A path filter of too many terms.
      const terms = Array.from({ length: 11 }, (_, i) => `value eq "t${i}"`).join(' or ');
      const long = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: `emails[${terms}].display`, value: 'x' }));
      expectScimError(long, 400, 'tooMany');
      expect(long.body.detail).toMatch(/at most 10 are allowed/);
      expect((await fetch(`${hub.url}/health`)).status).toBe(200);
    });

    it('caps multi-valued attributes at 10 values', async () => {
      const many = Array.from({ length: 11 }, (_, i) => ({ value: `p${i}@cap.test` }));
      const r = await scim('POST', '/Users', { schemas: [USER], userName: 'capped@cap.test', emails: many });
      expectScimError(r, 400, 'invalidValue');
      expect(r.body.detail).toBe('emails holds 11 values; a User may have at most 10');
      const id = await scimUser('growing@cap.test', { phoneNumbers: many.slice(0, 10).map((_p, i) => ({ value: `+1555000${i}` })) });
      expectScimError(
        await scim('PATCH', `/Users/${id}`, patch({ op: 'add', path: 'phoneNumbers', value: [{ value: '+15559999' }] })),
        400,
        'invalidValue',
      );
      // Attributes the schema does not know are kept as sent, within a fixed size.
      const heavy = await scim('POST', '/Users', {
        schemas: [USER],
        userName: 'heavy@cap.test',
        ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x${i}`, 'y'.repeat(400)])),
      });
      expectScimError(heavy, 400, 'invalidValue');
      expect(heavy.body.detail).toMatch(/a User may be at most 65536 bytes/);
    });
  });

  describe('names', () => {
    it('reserves svc-hub on REST, SCIM and sign-in', async () => {
      const r = await hub.request('POST', '/admin/users', { token: acme.adminKey, body: { name: 'svc-hub', role: 'viewer' } });
      expect(r.status).toBe(400);
      expect(r.body.detail).toMatch(/reserved/);
      const viaScim = await scimUser('svc-hub');
      const users = (await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey })).body.items as Array<{
        id: string;
        name: string;
      }>;
      expect(users.find((u) => u.id === viaScim)!.name).toBe('svc-hub-2');
      expect(users.some((u) => u.name === 'svc-hub')).toBe(false);
      // Sign-in names a new person after their address with freeUserName.
      expect(await freeUserName(hub.db, acme.org, 'SVC-HUB')).toBe('svc-hub-3');
    });

    it('group-member and invitation routes take a user name where they take a user id', async () => {
      await restUser('bob');
      const g = await hub.request('POST', '/admin/groups', { token: acme.adminKey, body: { path: 'named' } });
      const add = await hub.request('POST', `/admin/groups/${g.body.id}/members`, {
        token: acme.adminKey,
        body: { user_id: 'bob' },
        template: '/admin/groups/{id}/members',
      });
      expect(add.status, add.text).toBe(200);
      expect(add.body.user.name).toBe('bob');
      expect(
        (await hub.request('GET', '/admin/groups/named/members', { token: acme.adminKey })).body.items.map((m: { name: string }) => m.name),
      ).toEqual(['bob']);
      expect((await hub.request('DELETE', '/admin/groups/named/members/bob', { token: acme.adminKey })).status).toBe(204);
      expect((await hub.request('DELETE', '/admin/groups/named/members/bob', { token: acme.adminKey })).status).toBe(404);
      expect(
        (await hub.request('POST', `/admin/groups/named/members`, { token: acme.adminKey, body: { user_id: `nobody-${randomUUID()}` } }))
          .status,
      ).toBe(400);
    });
  });
});

describe('SCIM under the rate limiter', () => {
  it('counts each SCIM token under the per-minute policies: 429 with Retry-After in SCIM shape, other tokens unaffected', async () => {
    const hub = await startTestHub('pglite', { rateLimits: { perMinute: 4, writesPerMinute: 2 } });
    try {
      const org = await hub.newOrg('limited');
      const token = async (name: string) =>
        (await hub.request('POST', '/admin/scim-tokens', { token: org.adminKey, body: { name } })).body.token as string;
      const [a, b] = [await token('a'), await token('b')];
      const get = (t: string) => hub.request('GET', '//scim/v2/Users', { token: t });
      const post = (t: string, userName: string) =>
        hub.request('POST', '//scim/v2/Users', { token: t, body: { schemas: [USER], userName } });
      expect((await post(a, 'one')).status).toBe(201);
      expect((await post(a, 'two')).status).toBe(201);
      const write = await post(a, 'three');
      expect(write.status).toBe(429);
      expect(write.body).toMatchObject({ schemas: [ERROR], status: '429' });
      expect(write.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(write.headers.get('ratelimit-policy')).toMatch(/"requests";q=4;w=60, "writes";q=2;w=60/);
      expect((await get(a)).status).toBe(200);
      expect((await get(a)).status).toBe(429);
      expect((await get(b)).status).toBe(200);
    } finally {
      await hub.close();
    }
  });
});
