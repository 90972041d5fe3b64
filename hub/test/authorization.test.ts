import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { signJwt } from '../access/tokens.js';
import { ident } from '../data/sql.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { startHubProcess, type HubProcess } from './support/hub-process.js';

// Who may do what, as an outside audit tried it: episodes and sessions have owners and scopes,
// viewers change nothing, nobody acts as another person through a key, hub tokens expire and can
// be revoked, and every change of who may do what holds on every hub process at once.

const JWT = { current: 'authz-current-secret-0123456789abcdef' };

describe.each(DATABASES)('authorization (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let erin: { id: string; key: string };
  let sam: { id: string; key: string };
  let dana: { id: string; key: string };
  let vic: { id: string; key: string };
  let hidden: string;
  let shared: string;

  beforeAll(async () => {
    hub = await startTestHub(kind, { jwt: JWT, rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    acme = await hub.newOrg('acme');
    erin = await acme.user('erin', 'editor', [{ path: 'eng' }]);
    dana = await acme.user('dana', 'editor', [{ path: 'eng' }]);
    sam = await acme.user('sam', 'editor', [{ path: 'sales' }]);
    vic = await acme.user('vic', 'viewer', [{ path: 'eng' }]);
    hidden = (
      await hub.request('POST', '/engrams', { token: erin.key, body: { statement: 'Deploy keys rotate on Mondays', scope: 'user:erin' } })
    ).body.id;
    shared = (
      await hub.request('POST', '/engrams', {
        token: erin.key,
        body: { statement: 'Deploy through the pipeline only', scope: 'group:eng' },
      })
    ).body.id;
  }, 60_000);
  afterAll(async () => hub?.close());

  it('gives episodes an owner and a scope: others never list or read what they may not see', async () => {
    const own = await hub.request('POST', '/episodes', {
      token: erin.key,
      body: { summary: 'Rotated my deploy keys', channel: 'private-ed', agent: 'sam' },
      template: '/episodes',
    });
    expect(own.status).toBe(201);
    // `agent` is a label: the author is who the token says.
    expect(own.body).toMatchObject({ owner: 'erin', agent: 'sam', scope: 'user:erin' });
    const team = await hub.request('POST', '/episodes', {
      token: erin.key,
      body: { summary: 'Moved the deploy to the pipeline', scope: 'group:eng', engram_ids: [shared] },
      template: '/episodes',
    });
    expect(team.status).toBe(201);
    for (const reader of [sam, dana]) {
      const listed = await hub.request('GET', '/episodes?limit=50', { token: reader.key, template: '/episodes' });
      expect(listed.body.items.map((e: { id: string }) => e.id)).not.toContain(own.body.id);
      expect((await hub.request('GET', '/episodes?channel=private-ed', { token: reader.key })).body.items).toEqual([]);
      expect((await hub.request('GET', `/episodes/${own.body.id}`, { token: reader.key, template: '/episodes/{id}' })).status).toBe(404);
    }
    expect((await hub.request('GET', `/episodes/${team.body.id}`, { token: dana.key, template: '/episodes/{id}' })).body).toMatchObject({
      owner: 'erin',
      engram_ids: [shared],
    });
    expect((await hub.request('GET', `/episodes/${team.body.id}`, { token: sam.key })).status).toBe(404);
    expect((await hub.request('GET', '/episodes?channel=private-ed', { token: erin.key })).body.items).toHaveLength(1);
    // An episode may only point at what its author may read; a hidden engram reads as missing.
    const sneaky = await hub.request('POST', '/episodes', {
      token: sam.key,
      body: { summary: 'x', engram_ids: [hidden] },
      template: '/episodes',
    });
    expect(sneaky.status).toBe(400);
    expect(sneaky.body.detail).toBe(`engram_ids: no engram ${hidden}`);
    expect(
      (await hub.request('POST', '/episodes', { token: sam.key, body: { summary: 'x', engram_ids: ['ENG-NOPE-2020-0101-001'] } })).body
        .detail,
    ).toBe('engram_ids: no engram ENG-NOPE-2020-0101-001');
    expect((await hub.request('POST', '/episodes', { token: sam.key, body: { summary: 'x', scope: 'group:eng' } })).status).toBe(403);
  });

  it('gives sessions an owner and a scope: only the owner ends one, and readers see only the engrams they may read', async () => {
    const mine = await hub.request('POST', '/sessions', { token: erin.key, body: { task: 'deploy keys' }, template: '/sessions' });
    expect(mine.status).toBe(201);
    expect(mine.body.session).toMatchObject({ owner: 'erin', scope: 'user:erin' });
    expect(mine.body.session.engram_ids).toContain(hidden);
    for (const other of [sam, dana]) {
      expect((await hub.request('GET', `/sessions/${mine.body.session.id}`, { token: other.key, template: '/sessions/{id}' })).status).toBe(
        404,
      );
      expect(
        (await hub.request('POST', `/sessions/${mine.body.session.id}/end`, { token: other.key, body: { summary: 'hijack' } })).status,
      ).toBe(404);
    }
    const team = await hub.request('POST', '/sessions', {
      token: erin.key,
      body: { task: 'deploy keys pipeline', scope: 'group:eng' },
      template: '/sessions',
    });
    expect(team.body.session.engram_ids).toEqual(expect.arrayContaining([hidden, shared]));
    const seen = await hub.request('GET', `/sessions/${team.body.session.id}`, { token: dana.key, template: '/sessions/{id}' });
    expect(seen.status).toBe(200);
    expect(seen.body.engram_ids).toContain(shared);
    expect(seen.body.engram_ids).not.toContain(hidden);
    const hijack = await hub.request('POST', `/sessions/${team.body.session.id}/end`, {
      token: dana.key,
      body: { summary: 'hijacked' },
      template: '/sessions/{id}/end',
    });
    expect(hijack.status).toBe(403);
    expect(hijack.body.detail).toMatch(/started by erin; only they may end it/);
    const ended = await hub.request('POST', `/sessions/${team.body.session.id}/end`, {
      token: erin.key,
      body: { summary: 'done' },
      template: '/sessions/{id}/end',
    });
    expect(ended.status).toBe(200);
    // What dana could not see is still in the session for its owner.
    expect((await hub.request('GET', `/sessions/${team.body.session.id}`, { token: erin.key })).body.engram_ids).toEqual(
      expect.arrayContaining([hidden, shared]),
    );
    // An episode may name only a session its author may read.
    expect((await hub.request('POST', '/episodes', { token: sam.key, body: { summary: 'x', session: mine.body.session.id } })).status).toBe(
      400,
    );
  });

  it('lets a viewer change nothing: no feedback, no episode, no session', async () => {
    expect((await hub.request('POST', `/engrams/${shared}/feedback`, { token: vic.key, body: { signal: 'positive' } })).status).toBe(403);
    expect((await hub.request('POST', '/episodes', { token: vic.key, body: { summary: 'a viewer was here' } })).status).toBe(403);
    expect((await hub.request('POST', '/sessions', { token: vic.key, body: { task: 'x' } })).status).toBe(403);
    expect((await hub.request('POST', '/sessions', { token: vic.key, body: { task: 'x', scope: 'group:eng' } })).status).toBe(403);
    const s = ident(acme.org.schema);
    const byVic = await hub.db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM ${s}.episodes WHERE owner = 'vic') + (SELECT count(*) FROM ${s}.sessions WHERE owner = 'vic') AS n`,
    );
    expect(Number(byVic.rows[0]!.n)).toBe(0);
    expect((await hub.request('GET', `/engrams/${shared}`, { token: vic.key })).body.feedback_signals.positive).toBe(0);
  });

  it('lets nobody mint a key that acts as another person; service accounts and invitations are the ways', async () => {
    const admin = acme.adminKey;
    expect((await hub.request('POST', '/admin/api-keys', { token: admin, body: { user_id: erin.id } })).status).toBe(403);
    // Not even an admin reads erin's own scope through a key of hers.
    expect((await hub.request('GET', `/engrams/${hidden}`, { token: admin })).status).toBe(404);
    const bot = await hub.request('POST', '/admin/users', {
      token: admin,
      body: { name: 'ci-bot', kind: 'service', role: 'editor' },
      template: '/admin/users',
    });
    expect(bot.body.kind).toBe('service');
    const botKey = await hub.request('POST', '/admin/api-keys', {
      token: admin,
      body: { user_id: bot.body.id, name: 'ci' },
      template: '/admin/api-keys',
    });
    expect(botKey.status).toBe(201);
    expect((await hub.request('GET', '/me', { token: botKey.body.key })).body.user.name).toBe('ci-bot');
    expect((await hub.request('POST', '/admin/api-keys', { token: admin, body: { user_id: acme.adminId, name: 'mine' } })).status).toBe(
      201,
    );
    // Service accounts get keys from admins, not invitations.
    expect((await hub.request('POST', '/admin/invitations', { token: admin, body: { user_id: bot.body.id } })).status).toBe(400);

    // A person's first key: an invitation, redeemed once, without a token.
    const nia = await hub.request('POST', '/admin/users', { token: admin, body: { name: 'nia', role: 'editor' } });
    const inv = await hub.request('POST', '/admin/invitations', {
      token: admin,
      body: { user_id: nia.body.id, expires_in_hours: 2 },
      template: '/admin/invitations',
    });
    expect(inv.body.token).toMatch(/^svc_inv_/);
    const redeemed = await hub.request('POST', '/invitations/redeem', { body: { token: inv.body.token }, template: '/invitations/redeem' });
    expect(redeemed.status).toBe(201);
    expect(redeemed.body).toMatchObject({ user: { name: 'nia' }, org: { slug: 'acme' }, key: expect.stringMatching(/^svc_sk_/) });
    expect((await hub.request('GET', '/me', { token: redeemed.body.key })).body.user.name).toBe('nia');
    expect((await hub.request('POST', '/invitations/redeem', { body: { token: inv.body.token } })).status).toBe(400);
    expect((await hub.request('POST', '/invitations/redeem', { body: { token: 'svc_inv_guessing' } })).body.detail).toMatch(
      /unknown, already used or expired/,
    );
    await hub.running.hub.audit.drain();
    const redeemRow = await hub.request('GET', `/admin/audit?action=${encodeURIComponent('POST /api/v1/invitations/redeem')}`, {
      token: admin,
    });
    expect(redeemRow.body.items).toEqual([
      expect.objectContaining({ actor: 'nia', outcome: 201, resource: `api_key:${redeemed.body.id}` }),
    ]);

    // People manage their own keys; another's key is not theirs to see or revoke.
    const own = await hub.request('POST', '/me/api-keys', { token: redeemed.body.key, body: { name: 'laptop' }, template: '/me/api-keys' });
    expect(own.status).toBe(201);
    const listed = await hub.request('GET', '/me/api-keys', { token: redeemed.body.key, template: '/me/api-keys' });
    expect(listed.body.items.map((k: { name: string }) => k.name).sort()).toEqual(['api key', 'laptop']);
    expect(
      (await hub.request('DELETE', `/me/api-keys/${botKey.body.id}`, { token: redeemed.body.key, template: '/me/api-keys/{id}' })).status,
    ).toBe(404);
    expect(
      (await hub.request('DELETE', `/me/api-keys/${own.body.id}`, { token: redeemed.body.key, template: '/me/api-keys/{id}' })).status,
    ).toBe(200);
    expect((await hub.request('GET', '/me', { token: own.body.key })).status).toBe(401);

    // Admins may revoke anyone's key (offboarding), the creator's included; the row says whose.
    const second = await acme.user('ada', 'admin');
    const creatorKey = await hub.request('POST', '/me/api-keys', { token: admin, body: { name: 'spare' } });
    const off = await hub.request('DELETE', `/admin/api-keys/${creatorKey.body.id}`, {
      token: second.key,
      template: '/admin/api-keys/{id}',
    });
    expect(off.status).toBe(200);
    await hub.running.hub.audit.drain();
    const rows = await hub.request('GET', `/admin/audit?resource=${encodeURIComponent(`api_key:${creatorKey.body.id}`)}`, { token: admin });
    expect(rows.body.items.at(-1)).toMatchObject({
      actor: 'ada',
      action: 'DELETE /api/v1/admin/api-keys/:id',
      details: { owner: 'admin', own: false },
    });
  });

  it('refuses hub tokens without exp, or meant to live over a day, and honours revocation on every request', async () => {
    const u = await acme.user('tom', 'editor');
    const sign = (claims: Record<string, unknown>, exp?: number) => {
      let j = new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(u.id)
        .setJti(randomUUID())
        .setIssuedAt()
        .setIssuer('svc-hub');
      if (exp !== undefined) j = j.setExpirationTime(exp);
      return j.sign(new TextEncoder().encode(JWT.current));
    };
    const now = Math.floor(Date.now() / 1000);
    expect((await hub.request('GET', '/me', { token: await sign({ org: acme.org.id, ver: 0 }) })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: await sign({ org: acme.org.id, ver: 0 }, now + 7 * 86_400) })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: await sign({ org: acme.org.id, ver: 0 }, now + 600) })).status).toBe(200);

    const token = await signJwt(JWT, { sub: u.id, org: acme.org.id, jti: randomUUID(), ver: 0 }, 600);
    const other = await signJwt(JWT, { sub: u.id, org: acme.org.id, jti: randomUUID(), ver: 0 }, 600);
    expect((await hub.request('GET', '/me', { token })).status).toBe(200);
    const out = await hub.request('DELETE', '/me/token', { token, template: '/me/token' });
    expect(out.body).toEqual({ revoked: { id: expect.any(String), kind: 'jwt' } });
    expect((await hub.request('GET', '/me', { token })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: other })).status).toBe(200);
    // Deactivating a user ends every token and key they hold (end-access.ts); reactivating brings none back.
    expect(
      (await hub.request('PATCH', `/admin/users/${u.id}`, { token: acme.adminKey, body: { active: false }, template: '/admin/users/{id}' }))
        .body.active,
    ).toBe(false);
    expect((await hub.request('GET', '/me', { token: other })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: u.key })).status).toBe(401);
    await hub.request('PATCH', `/admin/users/${u.id}`, { token: acme.adminKey, body: { active: true } });
    expect((await hub.request('GET', '/me', { token: u.key })).status).toBe(401);
    expect((await hub.request('GET', '/me', { token: other })).status).toBe(401);
    expect((await hub.request('PATCH', `/admin/users/${acme.adminId}`, { token: acme.adminKey, body: { role: 'viewer' } })).status).toBe(
      400,
    );
  });
});

describe.runIf(DATABASES.includes('postgres'))('authorization changes reach every hub process at once', () => {
  let hub: TestHub;
  let child: HubProcess;
  beforeAll(async () => {
    hub = await startTestHub('postgres', { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
    child = await startHubProcess({ DATABASE_URL: hub.database.url!, SVC_HUB_RATE_LIMIT: '100000', SVC_HUB_WRITE_RATE_LIMIT: '100000' });
  }, 60_000);
  afterAll(async () => {
    await child?.stop();
    await hub?.close();
  });

  const on = (base: string, token: string, path = '/me', init: RequestInit = {}) =>
    fetch(`${base}/api/v1${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
    });

  it('a revoked key, a new role and a new membership hold on the other process before the call that made them returns', async () => {
    const org = await hub.newOrg('twoproc');
    const u = await org.user('uma', 'editor');
    const keyId = (await hub.request('GET', '/me', { token: u.key })).body.token.id;
    // The child has resolved and cached uma.
    expect((await on(child.url, u.key)).status).toBe(200);
    expect(((await (await on(child.url, u.key)).json()) as { scopes: { readable: string[] } }).scopes.readable).not.toContain('group:ops');

    const group = await hub.request('POST', '/admin/groups', { token: org.adminKey, body: { path: 'ops' } });
    await hub.request('POST', `/admin/groups/${group.body.id}/members`, { token: org.adminKey, body: { user_id: u.id } });
    expect(((await (await on(child.url, u.key)).json()) as { scopes: { readable: string[] } }).scopes.readable).toContain('group:ops');

    await hub.request('PATCH', `/admin/users/${u.id}`, { token: org.adminKey, body: { role: 'viewer' } });
    expect(
      (await on(child.url, u.key, '/engrams', { method: 'POST', body: JSON.stringify({ statement: 'Written as a viewer?' }) })).status,
    ).toBe(403);

    const revoked = await hub.request('DELETE', `/admin/api-keys/${keyId}`, { token: org.adminKey });
    expect(revoked.status).toBe(200);
    expect((await on(child.url, u.key)).status).toBe(401);
    expect(
      (await on(child.url, u.key, '/engrams', { method: 'POST', body: JSON.stringify({ statement: 'Written after revocation' }) })).status,
    ).toBe(401);
  });
});
