import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { signJwt } from '../access/tokens.js';
import { issueApiKey } from '../access/identity.js';
import { migrateHub } from '../data/migrate.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type Reply, type TestHub, type TestOrg } from './support/hub-fixture.js';

// SCIM 2.0 (hub/scim) over real HTTP: the admin's SCIM tokens, the provisioning sequences
// Microsoft Entra ID and Okta send (request bodies as their documentation shows them), filters,
// paging, PATCH, errors, and what a change does to the hub's own credentials and scopes at once.

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const JWT = { current: 'scim-test-secret-0123456789abcdef' };

const patch = (...Operations: unknown[]) => ({ schemas: [PATCH], Operations });

describe.each(DATABASES)('SCIM 2.0 (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let scimToken: string;

  /** A SCIM request: `path` under /scim/v2, the SCIM token unless another is given. */
  const scim = (
    method: string,
    path: string,
    body?: unknown,
    token: string | null = scimToken,
    type = 'application/scim+json',
  ): Promise<Reply> =>
    hub.request(method, `//scim/v2${path}`, {
      ...(token ? { token } : {}),
      ...(body !== undefined ? { body, headers: { 'content-type': type } } : {}),
    });
  const q = encodeURIComponent;

  const expectError = (r: Reply, status: number, scimType?: string) => {
    expect(r.status, r.text).toBe(status);
    expect(r.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(r.body.schemas).toEqual([ERROR]);
    expect(r.body.status).toBe(String(status));
    if (scimType) expect(r.body.scimType).toBe(scimType);
    expect(typeof r.body.detail).toBe('string');
    expect(r.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
  };

  async function newScimToken(org: TestOrg, name: string): Promise<{ id: string; token: string }> {
    const r = await hub.request('POST', '/admin/scim-tokens', { token: org.adminKey, body: { name }, template: '/admin/scim-tokens' });
    expect(r.status, r.text).toBe(201);
    return { id: r.body.id, token: r.body.token };
  }

  beforeAll(async () => {
    // Provisioning bursts: this file's token makes more writes a minute than the default policy (rate limits on SCIM: people-hardening.test.ts).
    hub = await startTestHub(kind, { jwt: JWT, rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    scimToken = (await newScimToken(acme, 'entra')).token;
  }, 60_000);
  afterAll(async () => hub?.close());

  it('admins create (token shown once), list and revoke SCIM tokens; other roles may not', async () => {
    const created = await hub.request('POST', '/admin/scim-tokens', {
      token: acme.adminKey,
      body: { name: 'okta' },
      template: '/admin/scim-tokens',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      name: 'okta',
      created_at: expect.any(String),
      revoked_at: null,
      created_by: 'admin',
    });
    expect(created.body.token).toMatch(/^svc_scim_[A-Za-z0-9_-]{43}$/);
    const listed = await hub.request('GET', '/admin/scim-tokens', { token: acme.adminKey, template: '/admin/scim-tokens' });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['entra', 'okta']));
    expect(listed.text).not.toContain(created.body.token);
    expect(listed.body.items.every((t: Record<string, unknown>) => t.token === undefined)).toBe(true);

    expect((await scim('GET', '/Users', undefined, created.body.token)).status).toBe(200);
    const revoked = await hub.request('DELETE', `/admin/scim-tokens/${created.body.id}`, {
      token: acme.adminKey,
      template: '/admin/scim-tokens/{id}',
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).toEqual(expect.any(String));
    expectError(await scim('GET', '/Users', undefined, created.body.token), 401);
    expect(
      (await hub.request('DELETE', `/admin/scim-tokens/${randomUUID()}`, { token: acme.adminKey, template: '/admin/scim-tokens/{id}' }))
        .status,
    ).toBe(404);

    expect(
      (await hub.request('POST', '/admin/scim-tokens', { token: acme.adminKey, body: { name: '  ' }, template: '/admin/scim-tokens' }))
        .status,
    ).toBe(400);
    expect(
      (await hub.request('POST', '/admin/scim-tokens', { token: acme.adminKey, body: {}, template: '/admin/scim-tokens' })).status,
    ).toBe(400);
    const editor = await acme.user('ed', 'editor');
    expect(
      (await hub.request('POST', '/admin/scim-tokens', { token: editor.key, body: { name: 'x' }, template: '/admin/scim-tokens' })).status,
    ).toBe(403);
    expect((await hub.request('GET', '/admin/scim-tokens', { token: editor.key, template: '/admin/scim-tokens' })).status).toBe(403);

    // Audited like every admin route.
    const audit = await hub.request('GET', `/admin/audit?action=${q('POST /api/v1/admin/scim-tokens')}`, { token: acme.adminKey });
    expect(audit.body.items.some((r: { resource: string }) => r.resource === `scim_token:${created.body.id}`)).toBe(true);
  });

  it('keeps the credentials apart: SCIM tokens only on SCIM, API keys and hub tokens only on REST', async () => {
    expect((await hub.request('GET', '/me', { token: scimToken })).status).toBe(401);
    expect((await hub.request('GET', '/admin/users', { token: scimToken })).status).toBe(401);
    expect((await hub.request('POST', '//mcp', { token: scimToken, body: {} })).status).toBe(401);
    const noKey = await scim('GET', '/Users', undefined, acme.adminKey);
    expectError(noKey, 401);
    expect(noKey.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const jwt = await signJwt(JWT, { sub: acme.adminId, org: acme.org.id, jti: randomUUID(), ver: 0 });
    expect((await hub.request('GET', '/me', { token: jwt })).status).toBe(200);
    expectError(await scim('GET', '/Users', undefined, jwt), 401);
    expectError(await scim('GET', '/Users', undefined, null), 401);
    expectError(await scim('GET', '/Users', undefined, 'svc_scim_' + 'A'.repeat(43)), 401);
    expectError(await scim('GET', '/ServiceProviderConfig', undefined, null), 401);

    // A token of one organization sees that organization only.
    const other = await hub.newOrg('other');
    const otherToken = (await newScimToken(other, 'idp')).token;
    await scim('POST', '/Users', { schemas: [USER], userName: 'only-in-acme@acme.test' });
    const seen = await scim('GET', `/Users?filter=${q('userName eq "only-in-acme@acme.test"')}`, undefined, otherToken);
    expect(seen.body.totalResults).toBe(0);
    expect((await scim('GET', '/Users', undefined, otherToken)).body.Resources.map((u: { userName: string }) => u.userName)).toEqual([
      'admin',
    ]);
  });

  it('serves ServiceProviderConfig, ResourceTypes and Schemas as application/scim+json', async () => {
    const spc = await scim('GET', '/ServiceProviderConfig');
    expect(spc.status).toBe(200);
    expect(spc.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    expect(spc.body).toMatchObject({
      patch: { supported: true },
      filter: { supported: true },
      bulk: { supported: false },
      authenticationSchemes: [{ type: 'oauthbearertoken' }],
    });
    const types = await scim('GET', '/ResourceTypes');
    expect(types.body.Resources.map((t: { id: string }) => t.id)).toEqual(['User', 'Group']);
    expect((await scim('GET', '/ResourceTypes/User')).body.schemaExtensions).toEqual([{ schema: ENTERPRISE, required: false }]);
    const schemas = await scim('GET', '/Schemas');
    expect(schemas.body.schemas).toEqual([LIST]);
    expect(schemas.body.Resources.map((s: { id: string }) => s.id)).toEqual([USER, GROUP, ENTERPRISE]);
    const user = (await scim('GET', `/Schemas/${USER}`)).body;
    expect(user.attributes.find((a: { name: string }) => a.name === 'userName')).toMatchObject({
      required: true,
      uniqueness: 'server',
      caseExact: false,
    });
    expectError(await scim('GET', '/Schemas/urn:nope'), 404);
    expectError(await scim('GET', '/Nope'), 404);
  });

  it('provisions, updates, disables and deletes a user as Microsoft Entra ID does', async () => {
    // Entra first looks the user up by its matching attribute, then creates it.
    const userName = 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1';
    const lookup = await scim('GET', `/Users?filter=${q(`userName eq "${userName}"`)}`);
    expect(lookup.status).toBe(200);
    expect(lookup.body).toEqual({ schemas: [LIST], totalResults: 0, startIndex: 1, itemsPerPage: 0, Resources: [] });
    const created = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName,
      active: true,
      emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
      [ENTERPRISE]: { employeeNumber: '701984', department: 'Tour Operations', costCenter: '4130' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const id = created.body.id;
    expect(created.headers.get('location')).toBe(`${hub.url}/scim/v2/Users/${id}`);
    expect(created.body).toMatchObject({
      schemas: [USER, ENTERPRISE],
      userName,
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      active: true,
      name: { givenName: 'givenName', familyName: 'familyName' },
      groups: [],
      [ENTERPRISE]: { employeeNumber: '701984', department: 'Tour Operations' },
      meta: {
        resourceType: 'User',
        location: `${hub.url}/scim/v2/Users/${id}`,
        created: expect.any(String),
        lastModified: expect.any(String),
      },
    });
    // The hub user behind it: a viewer, its name derived from userName, its email the work address.
    const users = await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey });
    const hubUser = users.body.items.find((u: { id: string }) => u.id === id);
    expect(hubUser).toMatchObject({
      name: 'test_user_ab6490ee-1e48-479e-a20b-2d77186b5dd1',
      role: 'viewer',
      kind: 'person',
      active: true,
      email: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com',
    });

    const byExternal = await scim('GET', `/Users?filter=${q('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`);
    expect(byExternal.body.Resources.map((u: { id: string }) => u.id)).toEqual([id]);

    const updated = await scim(
      'PATCH',
      `/Users/${id}`,
      patch(
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        { op: 'Add', path: `${ENTERPRISE}:manager`, value: { value: acme.adminId } },
        { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Sales' },
        { op: 'Replace', path: 'displayName', value: 'Updated Name' },
      ),
    );
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.emails).toEqual([{ primary: true, type: 'work', value: 'updatedEmail@microsoft.com' }]);
    expect(updated.body.name).toEqual({ formatted: 'givenName familyName', familyName: 'updatedFamilyName', givenName: 'givenName' });
    expect(updated.body[ENTERPRISE]).toMatchObject({ manager: { value: acme.adminId }, department: 'Sales', employeeNumber: '701984' });
    expect((await scim('GET', `/Users/${id}`)).body.displayName).toBe('Updated Name');
    expect(
      (await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey })).body.items.find((u: { id: string }) => u.id === id)
        .email,
    ).toBe('updatedEmail@microsoft.com');

    // Entra's userName change: allowed, the hub name stays.
    const renamed = await scim('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'userName', value: 'renamed@contoso.com' }));
    expect(renamed.body.userName).toBe('renamed@contoso.com');

    // Disable: Entra sends the boolean as a string unless the app opted in to the fixed behaviour.
    const disabled = await scim('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'active', value: 'False' }));
    expect(disabled.status).toBe(200);
    expect(disabled.body.active).toBe(false);
    expect((await scim('GET', `/Users?filter=${q('active eq false')}`)).body.Resources.map((u: { id: string }) => u.id)).toContain(id);
    const enabled = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'active', value: true }));
    expect(enabled.body.active).toBe(true);

    expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
    expectError(await scim('GET', `/Users/${id}`), 404);
    expectError(await scim('DELETE', `/Users/${id}`), 404);
    // The hub keeps the row (audit rows and engrams name it), inactive and without its address.
    const kept = (await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey })).body.items.find(
      (u: { id: string }) => u.id === id,
    );
    expect(kept).toMatchObject({ active: false, email: null });
    // And REST cannot bring it back.
    expect((await hub.request('PATCH', `/admin/users/${id}`, { token: acme.adminKey, body: { active: true } })).status).toBe(404);
    // Its userName is free again; the new user gets a new hub name.
    const again = await scim('POST', '/Users', { schemas: [USER], userName: 'renamed@contoso.com' });
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(id);

    // Every call left an audit row naming the token; writes commit theirs with them.
    const audit = await hub.request('GET', `/admin/audit?actor=${q('scim:entra')}&limit=200`, { token: acme.adminKey });
    const actions = audit.body.items
      .filter((r: { resource: string }) => r.resource === `user:${id}`)
      .map((r: { action: string; outcome: number }) => `${r.action} ${r.outcome}`);
    expect(actions).toEqual(expect.arrayContaining(['scim.user.create 201', 'scim.user.patch 200', 'scim.user.delete 204']));
  });

  it('provisions and updates groups and their members as Microsoft Entra ID does', async () => {
    const a = (await scim('POST', '/Users', { schemas: [USER], userName: 'member.a@contoso.com' })).body.id;
    const b = (await scim('POST', '/Users', { schemas: [USER], userName: 'member.b@contoso.com' })).body.id;
    expect((await scim('GET', `/Groups?excludedAttributes=members&filter=${q('displayName eq "Sales EMEA"')}`)).body.totalResults).toBe(0);
    const created = await scim('POST', '/Groups', {
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'Sales EMEA',
      meta: { resourceType: 'Group' },
      schemas: [GROUP],
    });
    expect(created.status, created.text).toBe(201);
    const gid = created.body.id;
    expect(created.body).toMatchObject({
      schemas: [GROUP],
      displayName: 'Sales EMEA',
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      members: [],
      meta: { resourceType: 'Group' },
    });
    const groups = await hub.request('GET', '/admin/groups?limit=200', { token: acme.adminKey });
    expect(groups.body.items.find((g: { id: string }) => g.id === gid)).toMatchObject({ path: 'sales-emea', scope: 'group:sales-emea' });

    const found = await scim('GET', `/Groups?excludedAttributes=members&filter=${q('displayName eq "sales emea"')}`);
    expect(found.body.Resources).toHaveLength(1);
    expect(found.body.Resources[0].members).toBeUndefined();
    expect((await scim('GET', `/Groups/${gid}?excludedAttributes=members`)).body).not.toHaveProperty('members');

    const added = await scim(
      'PATCH',
      `/Groups/${gid}`,
      patch({
        op: 'Add',
        path: 'members',
        value: [
          { $ref: null, value: a },
          { $ref: null, value: b },
        ],
      }),
    );
    expect(added.status, added.text).toBe(200);
    expect(added.body.members.map((m: { value: string }) => m.value).sort()).toEqual([a, b].sort());
    // Entra checks membership with a filter on id and members.
    const check = await scim('GET', `/Groups?excludedAttributes=members&filter=${q(`id eq "${gid}" and members eq "${a}"`)}`);
    expect(check.body.totalResults).toBe(1);
    expect((await scim('GET', `/Users/${a}`)).body.groups).toEqual([
      { value: gid, display: 'Sales EMEA', $ref: `${hub.url}/scim/v2/Groups/${gid}`, type: 'direct' },
    ]);

    const removed = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: a }] }));
    expect(removed.body.members.map((m: { value: string }) => m.value)).toEqual([b]);
    expect((await scim('GET', `/Groups?filter=${q(`id eq "${gid}" and members eq "${a}"`)}`)).body.totalResults).toBe(0);

    const renamed = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'Replace', path: 'displayName', value: 'Sales Europe' }));
    expect(renamed.body.displayName).toBe('Sales Europe');
    // The path (and so the scope) stays.
    expect(
      (await hub.request('GET', '/admin/groups?limit=200', { token: acme.adminKey })).body.items.find((g: { id: string }) => g.id === gid)
        .path,
    ).toBe('sales-emea');

    // A second group of the same name gets its own path.
    const twin = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Sales EMEA' });
    expect(
      (await hub.request('GET', '/admin/groups?limit=200', { token: acme.adminKey })).body.items.find(
        (g: { id: string }) => g.id === twin.body.id,
      ).path,
    ).toBe('sales-emea-2');

    expect((await scim('DELETE', `/Groups/${gid}`)).status).toBe(204);
    expectError(await scim('GET', `/Groups/${gid}`), 404);
    expect((await scim('GET', `/Users/${b}`)).body.groups).toEqual([]);
  });

  it('provisions, replaces, deactivates and reactivates a user and pushes groups as Okta does', async () => {
    const okta = (await newScimToken(acme, 'okta')).token;
    const lookup = await scim('GET', `/Users?filter=${q('userName eq "test.user@okta.local"')}&startIndex=1&count=100`, undefined, okta);
    expect(lookup.body.totalResults).toBe(0);
    const body = {
      schemas: [USER],
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    };
    const created = await scim('POST', '/Users', body, okta);
    expect(created.status, created.text).toBe(201);
    const id = created.body.id;
    expect(created.body.password).toBeUndefined();
    expect(created.text).not.toContain('1mz050nq');
    expect(
      (await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey })).body.items.find((u: { id: string }) => u.id === id)
        .name,
    ).toBe('test.user-okta.local');
    expect((await scim('GET', `/Users/${id}`, undefined, okta)).body).toMatchObject({
      id,
      userName: 'test.user@okta.local',
      displayName: 'Test User',
      locale: 'en-US',
    });

    // Okta's profile push: PUT of the whole user.
    const put = await scim(
      'PUT',
      `/Users/${id}`,
      {
        ...body,
        id,
        name: { givenName: 'Another', familyName: 'User' },
        emails: [{ primary: true, value: 'another.user@okta.local', type: 'work' }],
      },
      okta,
    );
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      id,
      name: { givenName: 'Another', familyName: 'User' },
      emails: [{ value: 'another.user@okta.local' }],
      active: true,
    });
    expect(put.body.locale).toBe('en-US');
    // A PUT without locale clears it: PUT replaces.
    const { locale: _locale, ...noLocale } = body;
    expect((await scim('PUT', `/Users/${id}`, noLocale, okta)).body.locale).toBeUndefined();

    const off = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { active: false } }), okta);
    expect(off.status).toBe(200);
    expect(off.body.active).toBe(false);
    const on = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { active: true } }), okta);
    expect(on.body.active).toBe(true);

    // Group push.
    const g = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Test SCIMv2', members: [] }, okta);
    expect(g.status).toBe(201);
    const gid = g.body.id;
    const renamed = await scim(
      'PATCH',
      `/Groups/${gid}`,
      patch({ op: 'replace', value: { id: gid, displayName: 'Test SCIMv2 renamed' } }),
      okta,
    );
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.displayName).toBe('Test SCIMv2 renamed');
    const add = await scim(
      'PATCH',
      `/Groups/${gid}`,
      patch({ op: 'add', path: 'members', value: [{ value: id, display: 'test.user@okta.local' }] }),
      okta,
    );
    expect(add.body.members).toEqual([
      { value: id, display: 'test.user@okta.local', $ref: `${hub.url}/scim/v2/Users/${id}`, type: 'User' },
    ]);
    const remove = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'remove', path: `members[value eq "${id}"]` }), okta);
    expect(remove.body.members).toEqual([]);
    const replaced = await scim(
      'PUT',
      `/Groups/${gid}`,
      { schemas: [GROUP], id: gid, displayName: 'Test SCIMv2', members: [{ value: id }] },
      okta,
    );
    expect(replaced.body.members.map((m: { value: string }) => m.value)).toEqual([id]);
    expect((await scim('DELETE', `/Groups/${gid}`, undefined, okta)).status).toBe(204);
    expect((await scim('DELETE', `/Users/${id}`, undefined, okta)).status).toBe(204);

    // Reads and refusals are audited too, after the answer, by the hub's audit writer.
    expectError(await scim('GET', `/Users/${id}`, undefined, okta), 404);
    expect(await hub.running.hub.audit.drain(10_000)).toBe(true);
    const audit = await hub.request('GET', `/admin/audit?actor=${q('scim:okta')}&limit=200`, { token: acme.adminKey });
    expect(audit.body.items.map((r: { action: string }) => r.action)).toEqual(
      expect.arrayContaining([
        'scim.user.list',
        'scim.user.get',
        'scim.user.create',
        'scim.user.replace',
        'scim.user.patch',
        'scim.group.create',
        'scim.group.patch',
        'scim.group.replace',
        'scim.group.delete',
        'scim.user.delete',
      ]),
    );
    expect(
      audit.body.items.filter((r: { action: string; outcome: number }) => r.action === 'scim.user.get' && r.outcome === 404),
    ).toHaveLength(1);
  });

  describe('filters and paging', () => {
    let org: TestOrg;
    let token: string;
    const ids: Record<string, string> = {};
    const names = async (filter: string): Promise<string[]> => {
      const r = await scim('GET', `/Users?filter=${q(filter)}`, undefined, token);
      expect(r.status, `${filter}: ${r.text}`).toBe(200);
      return r.body.Resources.map((u: { userName: string }) => u.userName).sort();
    };

    beforeAll(async () => {
      org = await hub.newOrg('filters');
      token = (await newScimToken(org, 'idp')).token;
      const people = [
        {
          userName: 'Alice@Contoso.com',
          externalId: 'EXT-A',
          title: 'Engineer',
          name: { givenName: 'Alice', familyName: 'Smith' },
          emails: [
            { value: 'alice@contoso.com', type: 'work', primary: true },
            { value: 'alice@home.example', type: 'home' },
          ],
          [ENTERPRISE]: { department: 'R&D', employeeNumber: '100' },
        },
        {
          userName: 'bob@contoso.com',
          externalId: 'EXT-B',
          title: 'Manager',
          name: { givenName: 'Bob', familyName: 'Jones' },
          emails: [{ value: 'bob@home.example', type: 'home' }],
          [ENTERPRISE]: { department: 'Sales', employeeNumber: '200' },
        },
        {
          userName: 'carol@fabrikam.com',
          name: { givenName: 'Carol', familyName: 'Smithers' },
          emails: [{ value: 'carol@fabrikam.com', type: 'work' }],
          active: false,
        },
      ];
      for (const p of people) {
        const r = await scim('POST', '/Users', { schemas: [USER, ENTERPRISE], ...p }, token);
        expect(r.status, r.text).toBe(201);
        ids[p.userName] = r.body.id;
      }
    });

    it('every comparison operator, case-insensitive names and values, caseExact ids', async () => {
      const all = ['Alice@Contoso.com', 'admin', 'bob@contoso.com', 'carol@fabrikam.com'];
      expect(await names('userName eq "alice@contoso.com"')).toEqual(['Alice@Contoso.com']);
      expect(await names('USERNAME EQ "ALICE@CONTOSO.COM"')).toEqual(['Alice@Contoso.com']);
      expect(await names('userName ne "alice@contoso.com"')).toEqual(all.filter((n) => n !== 'Alice@Contoso.com'));
      expect(await names('userName co "CONTOSO"')).toEqual(['Alice@Contoso.com', 'bob@contoso.com']);
      expect(await names('userName sw "b"')).toEqual(['bob@contoso.com']);
      expect(await names('userName ew "fabrikam.com"')).toEqual(['carol@fabrikam.com']);
      expect(await names('title pr')).toEqual(['Alice@Contoso.com', 'bob@contoso.com']);
      expect(await names('userName gt "b"')).toEqual(['bob@contoso.com', 'carol@fabrikam.com']);
      expect(await names('userName ge "bob@contoso.com"')).toEqual(['bob@contoso.com', 'carol@fabrikam.com']);
      expect(await names('userName lt "b"')).toEqual(['Alice@Contoso.com', 'admin']);
      expect(await names('userName le "bob@contoso.com"')).toEqual(['Alice@Contoso.com', 'admin', 'bob@contoso.com']);
      // externalId and id are caseExact (RFC 7643).
      expect(await names('externalId eq "EXT-A"')).toEqual(['Alice@Contoso.com']);
      expect(await names('externalId eq "ext-a"')).toEqual([]);
      expect(await names(`id eq "${ids['bob@contoso.com']}"`)).toEqual(['bob@contoso.com']);
      expect(await names('active eq false')).toEqual(['carol@fabrikam.com']);
      expect(await names('name.familyName sw "smith"')).toEqual(['Alice@Contoso.com', 'carol@fabrikam.com']);
      expect(await names(`${ENTERPRISE}:department eq "sales"`)).toEqual(['bob@contoso.com']);
      expect(await names(`${ENTERPRISE}:employeeNumber gt "150"`)).toEqual(['bob@contoso.com']);
      expect(await names('meta.created gt "2000-01-01T00:00:00Z"')).toEqual(all);
      expect(await names('meta.lastModified lt "2000-01-01T00:00:00Z"')).toEqual([]);
    });

    it('and, or, not, parentheses and attribute paths with value filters', async () => {
      expect(await names('userName co "contoso" and title eq "manager"')).toEqual(['bob@contoso.com']);
      expect(await names('title eq "engineer" or active eq false')).toEqual(['Alice@Contoso.com', 'carol@fabrikam.com']);
      expect(await names('not (userName co "contoso")')).toEqual(['admin', 'carol@fabrikam.com']);
      expect(await names('(title eq "engineer" or title eq "manager") and not (name.givenName eq "bob")')).toEqual(['Alice@Contoso.com']);
      expect(await names('emails[type eq "work"]')).toEqual(['Alice@Contoso.com', 'carol@fabrikam.com']);
      expect(await names('emails[type eq "work" and value co "fabrikam"]')).toEqual(['carol@fabrikam.com']);
      expect(await names('emails[type eq "work"].value co "contoso"')).toEqual(['Alice@Contoso.com']);
      expect(await names('emails.value ew "home.example"')).toEqual(['Alice@Contoso.com', 'bob@contoso.com']);
      expect(await names('emails co "bob@"')).toEqual(['bob@contoso.com']);
      expect(await names('emails[not (type eq "home")]')).toEqual(['Alice@Contoso.com', 'carol@fabrikam.com']);
    });

    it('refuses filters that do not parse or compare wrongly with invalidFilter', async () => {
      for (const bad of [
        'userName eq',
        'userName xx "a"',
        'emails[type eq "work"',
        '(userName eq "a"',
        'active gt true',
        'userName co 5',
        'and or',
      ]) {
        expectError(await scim('GET', `/Users?filter=${q(bad)}`, undefined, token), 400, 'invalidFilter');
      }
      expectError(await scim('GET', `/Groups?filter=${q('displayName eq')}`, undefined, token), 400, 'invalidFilter');
    });

    it('pages with startIndex and count, and projects attributes', async () => {
      const page = await scim('GET', '/Users?startIndex=2&count=2', undefined, token);
      expect(page.body).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
      expect(page.body.Resources).toHaveLength(2);
      const all = (await scim('GET', '/Users', undefined, token)).body.Resources.map((u: { id: string }) => u.id);
      expect(page.body.Resources.map((u: { id: string }) => u.id)).toEqual(all.slice(1, 3));
      expect((await scim('GET', '/Users?startIndex=4&count=10', undefined, token)).body).toMatchObject({
        totalResults: 4,
        itemsPerPage: 1,
      });
      expect((await scim('GET', '/Users?startIndex=9', undefined, token)).body).toMatchObject({
        totalResults: 4,
        itemsPerPage: 0,
        Resources: [],
      });
      expect((await scim('GET', '/Users?count=0', undefined, token)).body).toMatchObject({ totalResults: 4, itemsPerPage: 0 });
      expect((await scim('GET', '/Users?startIndex=0&count=-3', undefined, token)).body).toMatchObject({ startIndex: 1, itemsPerPage: 0 });
      expect((await scim('GET', `/Users?filter=${q('userName co "contoso"')}&count=1`, undefined, token)).body).toMatchObject({
        totalResults: 2,
        itemsPerPage: 1,
      });
      expectError(await scim('GET', '/Users?count=many', undefined, token), 400, 'invalidValue');

      const only = await scim(
        'GET',
        `/Users?filter=${q('userName eq "bob@contoso.com"')}&attributes=userName,name.givenName`,
        undefined,
        token,
      );
      expect(only.body.Resources[0]).toEqual({
        schemas: [USER, ENTERPRISE],
        id: ids['bob@contoso.com'],
        userName: 'bob@contoso.com',
        name: { givenName: 'Bob' },
      });
      const without = await scim(
        'GET',
        `/Users/${ids['bob@contoso.com']}?excludedAttributes=emails,groups,${ENTERPRISE}:department`,
        undefined,
        token,
      );
      expect(without.body.emails).toBeUndefined();
      expect(without.body.groups).toBeUndefined();
      expect(without.body[ENTERPRISE]).toEqual({ employeeNumber: '200' });
      expect(without.body.userName).toBe('bob@contoso.com');
    });
  });

  describe('PATCH', () => {
    let id: string;
    const apply = (...ops: unknown[]) => scim('PATCH', `/Users/${id}`, patch(...ops));

    beforeAll(async () => {
      const r = await scim('POST', '/Users', {
        schemas: [USER],
        userName: 'patch.me@contoso.com',
        name: { givenName: 'Pat', familyName: 'Ch' },
        emails: [{ value: 'patch.me@contoso.com', type: 'work', primary: true }],
        phoneNumbers: [{ value: '+1 555 0100', type: 'work' }],
      });
      id = r.body.id;
    });

    it('add, replace and remove with a path', async () => {
      let r = await apply({ op: 'add', path: 'emails', value: [{ value: 'pat@home.example', type: 'home' }] });
      expect(r.body.emails.map((e: { type: string }) => e.type)).toEqual(['work', 'home']);
      r = await apply({ op: 'add', path: 'title', value: 'Tester' });
      expect(r.body.title).toBe('Tester');
      r = await apply({ op: 'replace', path: 'name', value: { familyName: 'Chen' } });
      expect(r.body.name).toEqual({ givenName: 'Pat', familyName: 'Chen' });
      r = await apply({ op: 'replace', path: 'NAME.GIVENNAME', value: 'Patricia' });
      expect(r.body.name.givenName).toBe('Patricia');
      r = await apply({ op: 'replace', path: 'phoneNumbers', value: [{ value: '+1 555 0199', type: 'mobile' }] });
      expect(r.body.phoneNumbers).toEqual([{ value: '+1 555 0199', type: 'mobile' }]);
      r = await apply({ op: 'remove', path: 'title' });
      expect(r.body.title).toBeUndefined();
      r = await apply({ op: 'remove', path: 'name.familyName' });
      expect(r.body.name).toEqual({ givenName: 'Patricia' });
      r = await apply({ op: 'replace', path: `${USER}:displayName`, value: 'Full URN' });
      expect(r.body.displayName).toBe('Full URN');
    });

    it('value-filtered paths: replace, add (creating the element), remove', async () => {
      let r = await apply({ op: 'replace', path: 'emails[type eq "work"].value', value: 'pat.work@contoso.com' });
      expect(r.body.emails.find((e: { type: string }) => e.type === 'work').value).toBe('pat.work@contoso.com');
      r = await apply({ op: 'add', path: 'emails[type eq "other"].value', value: 'pat@other.example' });
      expect(r.body.emails.find((e: { type: string }) => e.type === 'other')).toEqual({ type: 'other', value: 'pat@other.example' });
      r = await apply({ op: 'replace', path: 'emails[type eq "home"]', value: { value: 'pat@new-home.example', primary: 'false' } });
      expect(r.body.emails.find((e: { type: string }) => e.type === 'home')).toEqual({
        value: 'pat@new-home.example',
        type: 'home',
        primary: false,
      });
      r = await apply({ op: 'remove', path: 'emails[type eq "other"]' });
      expect(r.body.emails.map((e: { type: string }) => e.type)).toEqual(['work', 'home']);
      r = await apply({ op: 'remove', path: 'emails[type eq "home"].primary' });
      expect(r.body.emails.find((e: { type: string }) => e.type === 'home')).toEqual({ value: 'pat@new-home.example', type: 'home' });
      expectError(await apply({ op: 'replace', path: 'emails[type eq "pager"].value', value: 'x' }), 400, 'noTarget');
    });

    it('without a path: attributes, dotted keys, the enterprise extension, booleans as strings', async () => {
      let r = await apply({ op: 'Replace', value: { displayName: 'No Path', 'name.givenName': 'Dotted', active: 'False' } });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({ displayName: 'No Path', name: { givenName: 'Dotted' }, active: false });
      r = await apply({ op: 'replace', value: { active: 'true' } });
      expect(r.body.active).toBe(true);
      r = await apply({ op: 'Add', value: { [ENTERPRISE]: { department: 'QA' }, nickName: 'pc' } });
      expect(r.body).toMatchObject({ schemas: [USER, ENTERPRISE], [ENTERPRISE]: { department: 'QA' }, nickName: 'pc' });
      r = await apply({ op: 'add', value: { [`${ENTERPRISE}:costCenter`]: '42' } });
      expect(r.body[ENTERPRISE]).toEqual({ department: 'QA', costCenter: '42' });
      r = await apply({ op: 'remove', path: ENTERPRISE });
      expect(r.body.schemas).toEqual([USER]);
      expect(r.body[ENTERPRISE]).toBeUndefined();
    });

    it('refuses what it cannot apply, with the right scimType and nothing changed', async () => {
      const before = (await scim('GET', `/Users/${id}`)).body;
      expectError(await apply({ op: 'remove' }), 400, 'noTarget');
      expectError(await apply({ op: 'move', path: 'title', value: 'x' }), 400, 'invalidSyntax');
      expectError(await apply({ op: 'replace', path: 'emails[type eq', value: 'x' }), 400, 'invalidPath');
      expectError(await apply({ op: 'replace', path: 'a b c', value: 'x' }), 400, 'invalidPath');
      expectError(await apply({ op: 'replace', path: 'id', value: 'x' }), 400, 'mutability');
      expectError(await apply({ op: 'replace', path: 'meta.created', value: 'x' }), 400, 'mutability');
      expectError(await apply({ op: 'replace', value: { id: 'another-id' } }), 400, 'mutability');
      expectError(await apply({ op: 'add', path: 'title' }), 400, 'invalidValue');
      expectError(await apply({ op: 'replace', path: 'active', value: 'maybe' }), 400, 'invalidValue');
      expectError(await apply({ op: 'replace', path: 'userName', value: '' }), 400, 'invalidValue');
      expectError(await apply({ op: 'replace', value: 'not an object' }), 400, 'invalidValue');
      // A good op before a bad one: the whole request is refused.
      expectError(
        await apply({ op: 'replace', path: 'title', value: 'Half' }, { op: 'replace', path: 'id', value: 'x' }),
        400,
        'mutability',
      );
      expectError(await scim('PATCH', `/Users/${id}`, { Operations: [{ op: 'add', path: 'title', value: 'x' }] }), 400, 'invalidSyntax');
      expectError(await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [] }), 400, 'invalidSyntax');
      expectError(await scim('PATCH', `/Users/${randomUUID()}`, patch({ op: 'add', path: 'title', value: 'x' })), 404);
      expect((await scim('GET', `/Users/${id}`)).body).toEqual(before);
    });

    it('group members: add and remove by path, by value filter and by a value list', async () => {
      const other = (await scim('POST', '/Users', { schemas: [USER], userName: 'patch.other@contoso.com' })).body.id;
      const gid = (await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Patch Group', members: [{ value: id }] })).body.id;
      const members = (r: Reply) => r.body.members.map((m: { value: string }) => m.value).sort();
      let r = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'add', path: 'members', value: [{ value: other }, { value: id }] }));
      expect(members(r)).toEqual([id, other].sort());
      r = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'remove', path: `members[value eq "${id}"]` }));
      expect(members(r)).toEqual([other]);
      r = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'replace', path: 'members', value: [{ value: id }] }));
      expect(members(r)).toEqual([id]);
      r = await scim('PATCH', `/Groups/${gid}`, patch({ op: 'remove', path: 'members' }));
      expect(members(r)).toEqual([]);
      expectError(
        await scim('PATCH', `/Groups/${gid}`, patch({ op: 'add', path: 'members', value: [{ value: randomUUID() }] })),
        400,
        'invalidValue',
      );
      expectError(await scim('PATCH', `/Groups/${gid}`, patch({ op: 'replace', path: 'displayName', value: '' })), 400, 'invalidValue');
    });
  });

  it('answers bad requests with SCIM errors and the right scimType, never a 500', async () => {
    await scim('POST', '/Users', { schemas: [USER], userName: 'Unique@Contoso.com' });
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'unique@contoso.COM' }), 409, 'uniqueness');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'admin' }), 409, 'uniqueness');
    const other = (await scim('POST', '/Users', { schemas: [USER], userName: 'not-unique-yet@contoso.com' })).body.id;
    expectError(
      await scim('PATCH', `/Users/${other}`, patch({ op: 'replace', path: 'userName', value: 'UNIQUE@contoso.com' })),
      409,
      'uniqueness',
    );
    expectError(await scim('POST', '/Users', { userName: 'no-schemas' }), 400, 'invalidSyntax');
    expectError(await scim('POST', '/Users', { schemas: [USER] }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'x', active: 'perhaps' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'x', emails: 'x@y' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'x', name: 'x' }), 400, 'invalidValue');
    expectError(await scim('POST', '/Users', [1, 2]), 400, 'invalidSyntax');
    const proto = `{"schemas": ["${USER}"], "__proto__": {"userName": "via-prototype"}}`;
    expectError(
      await hub.request('POST', '//scim/v2/Users', { token: scimToken, raw: proto, headers: { 'content-type': 'application/scim+json' } }),
      400,
      'invalidValue',
    );
    expectError(
      await hub.request('POST', '//scim/v2/Users', {
        token: scimToken,
        raw: '{"schemas": [',
        headers: { 'content-type': 'application/scim+json' },
      }),
      400,
      'invalidSyntax',
    );
    expectError(
      await hub.request('POST', '//scim/v2/Users', { token: scimToken, raw: 'userName=x', headers: { 'content-type': 'text/plain' } }),
      415,
    );
    expectError(
      await scim('PUT', `/Users/${other}`, { schemas: [USER], id: 'another', userName: 'not-unique-yet@contoso.com' }),
      400,
      'mutability',
    );
    expectError(await scim('PUT', `/Users/${randomUUID()}`, { schemas: [USER], userName: 'ghost' }), 404);
    expectError(await scim('POST', '/Groups', { schemas: [GROUP] }), 400, 'invalidValue');
    expectError(
      await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'G', members: [{ value: randomUUID() }] }),
      400,
      'invalidValue',
    );
    expectError(await scim('GET', '/Users/%E0%A4%A'), 400);
    // Refused bodies are audited like the rest.
    expect(await hub.running.hub.audit.drain(10_000)).toBe(true);
    const refused = await hub.request('GET', `/admin/audit?actor=${q('scim:entra')}&action=scim.request&limit=200`, {
      token: acme.adminKey,
    });
    expect(refused.body.items.map((r: { outcome: number }) => r.outcome)).toEqual(expect.arrayContaining([400, 415]));
    // application/json bodies are accepted too.
    expect(
      (await scim('POST', '/Users', { schemas: [USER], userName: 'plain-json@contoso.com' }, scimToken, 'application/json')).status,
    ).toBe(201);
  });

  it('derives unique hub names from userName', async () => {
    const made: Array<string | number> = [];
    for (const userName of ['alice@contoso.com', 'ALICE@contoso.com.', 'Alice@Contoso.com!', '   ', '..émile@x.fr']) {
      const r = await scim('POST', '/Users', { schemas: [USER], userName });
      made.push(r.status === 201 ? r.body.id : r.status);
    }
    expect(made[3]).toBe(400);
    const users = (await hub.request('GET', '/admin/users?limit=200', { token: acme.adminKey })).body.items as Array<{
      id: string;
      name: string;
      role: string;
    }>;
    const nameOf = (id: string | number) => users.find((u) => u.id === id)?.name;
    expect(nameOf(made[0])).toBe('alice-contoso.com');
    expect(nameOf(made[1])).toBe('alice-contoso.com.');
    expect(nameOf(made[2])).toBe('alice-contoso.com-');
    expect(nameOf(made[4])).toBe('mile-x.fr');
    expect(users.filter((u) => made.includes(u.id)).every((u) => u.role === 'viewer')).toBe(true);
  });

  it('deactivating or deleting a user ends their API key and hub tokens at once', async () => {
    const created = await scim('POST', '/Users', { schemas: [USER], userName: 'leaver@contoso.com' });
    const id = created.body.id;
    const { key } = await issueApiKey(hub.db, acme.org, id, 'laptop');
    const jwt = await signJwt(JWT, { sub: id, org: acme.org.id, jti: randomUUID(), ver: 0 });
    expect((await hub.request('GET', '/me', { token: key })).status).toBe(200);
    expect((await hub.request('GET', '/me', { token: jwt })).status).toBe(200);
    expect((await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'active', value: false }))).status).toBe(200);
    expect((await hub.request('GET', '/me', { token: key })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: jwt })).status).toBe(401);
    // Reactivating does not bring the old credentials back.
    expect((await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { active: true } }))).body.active).toBe(true);
    expect((await hub.request('GET', '/me', { token: key })).status).toBe(401);
    const keys = await hub.request('GET', '/admin/api-keys?limit=200', { token: acme.adminKey });
    expect(keys.body.items.find((k: { user_id: string }) => k.user_id === id).revoked_at).toEqual(expect.any(String));

    const second = await issueApiKey(hub.db, acme.org, id, 'new laptop');
    expect((await hub.request('GET', '/me', { token: second.key })).status).toBe(200);
    expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
    expect((await hub.request('GET', '/me', { token: second.key })).status).toBe(401);
  });

  it('group membership changes reach the member’s scopes on their next request', async () => {
    const uid = (await scim('POST', '/Users', { schemas: [USER], userName: 'scoped@contoso.com' })).body.id;
    const { key } = await issueApiKey(hub.db, acme.org, uid, 'cli');
    const gid = (await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Platform Team' })).body.id;
    const readable = async () => (await hub.request('GET', '/me', { token: key, template: '/me' })).body.scopes.readable as string[];
    expect(await readable()).not.toContain('group:platform-team');
    await scim('PATCH', `/Groups/${gid}`, patch({ op: 'add', path: 'members', value: [{ value: uid }] }));
    expect(await readable()).toContain('group:platform-team');
    await scim('PATCH', `/Groups/${gid}`, patch({ op: 'remove', path: `members[value eq "${uid}"]` }));
    expect(await readable()).not.toContain('group:platform-team');
    await scim('PUT', `/Groups/${gid}`, { schemas: [GROUP], displayName: 'Platform Team', members: [{ value: uid }] });
    expect(await readable()).toContain('group:platform-team');
    await scim('DELETE', `/Groups/${gid}`);
    expect(await readable()).not.toContain('group:platform-team');
  });

  it('shows users and groups made through REST, and applies its migration to an existing organization', async () => {
    const old = await hub.newOrg('before-scim');
    await old.user('dana', 'editor', [{ path: 'eng' }]);
    // Take the organization (and the control schema) back to before SCIM, then migrate as a hub start does.
    const s = ident(old.org.schema);
    await hub.db.exec(`
      DROP TABLE ${s}.scim_tokens;
      DROP INDEX ${s}.users_scim_user_name;
      ALTER TABLE ${s}.users DROP COLUMN scim, DROP COLUMN scim_user_name, DROP COLUMN scim_modified_at, DROP COLUMN deleted_at;
      ALTER TABLE ${s}.groups DROP COLUMN scim, DROP COLUMN scim_modified_at;
      DELETE FROM ${s}.schema_migrations WHERE version = 14;
      DROP TABLE ${CONTROL_SCHEMA}.scim_token_index;
      DELETE FROM ${CONTROL_SCHEMA}.schema_migrations WHERE version = 7;`);
    const applied = await migrateHub(hub.db);
    expect(applied.control).toBe(1);
    expect(applied.orgs['before-scim']).toBe(1);
    expect(applied.orgs.acme).toBe(0);

    const token = (await newScimToken(old, 'idp')).token;
    const users = await scim('GET', '/Users', undefined, token);
    expect(users.body.Resources.map((u: { userName: string }) => u.userName).sort()).toEqual(['admin', 'dana']);
    const dana = users.body.Resources.find((u: { userName: string }) => u.userName === 'dana');
    expect(dana).toMatchObject({ active: true, groups: [{ display: 'eng' }] });
    const groups = await scim('GET', '/Groups', undefined, token);
    expect(groups.body.Resources).toEqual([
      expect.objectContaining({ displayName: 'eng', members: [expect.objectContaining({ value: dana.id, display: 'dana' })] }),
    ]);
    // A group with child groups (made through REST) cannot go before them.
    expect((await hub.request('POST', '/admin/groups', { token: old.adminKey, body: { path: 'eng/backend' } })).status).toBe(201);
    const eng = groups.body.Resources[0].id;
    expectError(await scim('DELETE', `/Groups/${eng}`, undefined, token), 409);
    expect((await scim('GET', `/Groups/${eng}`, undefined, token)).status).toBe(200);
    // REST users take part in uniqueness under their name.
    expectError(await scim('POST', '/Users', { schemas: [USER], userName: 'DANA' }, token), 409, 'uniqueness');
    // The old tokens of the organization still work after the migration.
    expect((await hub.request('GET', '/me', { token: old.adminKey })).status).toBe(200);
  });
});
