import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asOwner } from './support/audit-tamper.js';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';

// The REST routes the admin UI and the portal read (and anyone else may): a group's members and
// taking one out, the audit chain verified now and the log newest first, an engram's history,
// the caller's own sessions. Every answer is checked against the OpenAPI description.

describe.each(DATABASES)('routes behind the admin UI (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it("lists a group's members and removes one, whose scopes change at their next request", async () => {
    const eve = await acme.user('eve', 'editor', [{ path: 'eng' }]);
    const gus = await acme.user('gus', 'viewer', [{ path: 'eng', readOnly: true }]);
    const members = await hub.request('GET', '/admin/groups/eng/members', { token: acme.adminKey, template: '/admin/groups/{id}/members' });
    expect(members.status).toBe(200);
    expect(members.body.items).toEqual([
      { user_id: eve.id, name: 'eve', role: 'editor', active: true, read_only: false },
      { user_id: gus.id, name: 'gus', role: 'viewer', active: true, read_only: true },
    ]);
    expect((await hub.request('GET', '/me', { token: eve.key })).body.scopes.writable).toContain('group:eng');

    const gone = await hub.request('DELETE', `/admin/groups/eng/members/${eve.id}`, {
      token: acme.adminKey,
      template: '/admin/groups/{id}/members/{user_id}',
    });
    expect(gone.status).toBe(204);
    expect((await hub.request('GET', '/me', { token: eve.key })).body.scopes.readable).not.toContain('group:eng');
    // The audit row names the group by its id (as adding a member does), though the call named it by path.
    const groups = await hub.request('GET', '/admin/groups', { token: acme.adminKey, template: '/admin/groups' });
    const eng = groups.body.items.find((g: { path: string }) => g.path === 'eng');
    await hub.running.hub.audit.drain();
    const removal = await hub.request('GET', `/admin/audit?resource=group:${eng.id}&order=desc&limit=1`, {
      token: acme.adminKey,
      template: '/admin/audit',
    });
    expect(removal.body.items[0]).toMatchObject({
      action: expect.stringMatching(/^DELETE \/api\/v1\/admin\/groups\/.*members/),
      outcome: 204,
      details: { user_id: eve.id },
    });
    const again = await hub.request('DELETE', `/admin/groups/eng/members/${eve.id}`, {
      token: acme.adminKey,
      template: '/admin/groups/{id}/members/{user_id}',
    });
    expect(again.status).toBe(404);
    expect(again.body.detail).toMatch(/not a member of group eng/);
    expect(
      (await hub.request('GET', '/admin/groups/nope/members', { token: acme.adminKey, template: '/admin/groups/{id}/members' })).status,
    ).toBe(404);
    expect(
      (
        await hub.request('DELETE', `/admin/groups/nope/members/${gus.id}`, {
          token: acme.adminKey,
          template: '/admin/groups/{id}/members/{user_id}',
        })
      ).status,
    ).toBe(404);
    expect((await hub.request('GET', '/admin/groups/eng/members', { token: gus.key, template: '/admin/groups/{id}/members' })).status).toBe(
      403,
    );
    expect(
      (
        await hub.request('DELETE', `/admin/groups/eng/members/${gus.id}`, {
          token: eve.key,
          template: '/admin/groups/{id}/members/{user_id}',
        })
      ).status,
    ).toBe(403);
  });

  it('answers only the calls that changed something with changes=true, as the overview lists them', async () => {
    const marker = `Changes-only probe ${Date.now()}`;
    await hub.request('GET', '/me', { token: acme.adminKey });
    await hub.request('POST', '/recall', { token: acme.adminKey, body: { query: 'probe' } });
    const made = await hub.request('POST', '/engrams', { token: acme.adminKey, body: { statement: marker, scope: 'org:acme' } });
    await hub.running.hub.audit.drain();
    const changes = await hub.request('GET', '/admin/audit?order=desc&limit=50&changes=true', {
      token: acme.adminKey,
      template: '/admin/audit',
    });
    expect(changes.status).toBe(200);
    const actions = changes.body.items.map((r: { action: string }) => r.action);
    expect(actions).toContain('POST /api/v1/engrams');
    expect(actions.filter((a: string) => /^GET |^audit\.writer\.|^POST \/api\/v1\/recall$/.test(a))).toEqual([]);
    expect(changes.body.items.find((r: { resource: string }) => r.resource === `engram:${made.body.id}`)).toMatchObject({
      action: 'POST /api/v1/engrams',
      outcome: 201,
      actor: 'admin',
    });
    const all = await hub.request('GET', '/admin/audit?order=desc&limit=50', { token: acme.adminKey });
    expect(all.body.items.map((r: { action: string }) => r.action)).toEqual(
      expect.arrayContaining(['GET /api/v1/me', 'POST /api/v1/recall']),
    );
  });

  it('verifies the audit chain on demand, naming the first edited row, and pages the log newest first', async () => {
    for (let i = 0; i < 5; i++) await hub.request('GET', '/me', { token: acme.adminKey });
    const ok = await hub.request('GET', '/admin/audit/verify', { token: acme.adminKey, template: '/admin/audit/verify' });
    expect(ok.status).toBe(200);
    // This hub's own audit writer is running: its start has no stop yet.
    expect(ok.body).toMatchObject({ ok: true, gaps: [] });
    expect(ok.body.rows).toBeGreaterThan(5);

    const newest = await hub.request('GET', '/admin/audit?order=desc&limit=3', { token: acme.adminKey, template: '/admin/audit' });
    const seqs = newest.body.items.map((r: { seq: number }) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a: number, b: number) => b - a));
    const older = await hub.request('GET', `/admin/audit?order=desc&limit=3&cursor=${newest.body.next_cursor}`, {
      token: acme.adminKey,
      template: '/admin/audit',
    });
    expect(Math.max(...older.body.items.map((r: { seq: number }) => r.seq))).toBeLessThan(Math.min(...seqs));
    expect((await hub.request('GET', '/admin/audit?order=sideways', { token: acme.adminKey, template: '/admin/audit' })).status).toBe(400);

    await asOwner(hub.db, acme.org, `UPDATE "${acme.org.schema}".audit_log SET actor = 'mallory' WHERE seq = 3`);
    const broken = await hub.request('GET', '/admin/audit/verify', { token: acme.adminKey, template: '/admin/audit/verify' });
    expect(broken.body).toMatchObject({ ok: false, first_bad: { seq: 3, problem: expect.stringMatching(/does not match its signature/) } });
    const viewer = await acme.user('val', 'viewer');
    expect((await hub.request('GET', '/admin/audit/verify', { token: viewer.key, template: '/admin/audit/verify' })).status).toBe(403);
  });

  it("answers an engram's history newest first, hidden exactly like the engram", async () => {
    const made = await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'Migrations run before the deploy, never after it', type: 'procedural', scope: 'org:acme' },
    });
    const id = made.body.id as string;
    await hub.request('PATCH', `/engrams/${id}`, {
      token: acme.adminKey,
      body: { rationale: 'a deploy that needs the new column fails otherwise' },
    });
    await hub.request('DELETE', `/engrams/${id}`, { token: acme.adminKey });
    const history = await hub.request('GET', `/engrams/${id}/history`, { token: acme.adminKey, template: '/engrams/{id}/history' });
    expect(history.status).toBe(200);
    const actions = history.body.items.map((e: { action: string }) => e.action);
    expect(actions[0]).toBe('retired');
    expect(actions.at(-1)).toBe('created');
    expect(actions).toHaveLength(3);

    const mine = await hub.request('POST', '/engrams', {
      token: acme.adminKey,
      body: { statement: 'My own note on naming', type: 'terminological', scope: 'user:admin' },
    });
    const other = await acme.user('ora', 'editor');
    const hidden = await hub.request('GET', `/engrams/${mine.body.id}/history`, { token: other.key, template: '/engrams/{id}/history' });
    expect(hidden.status).toBe(404);
    expect(
      (await hub.request('GET', `/engrams/ENG-NOPE-1/history`, { token: acme.adminKey, template: '/engrams/{id}/history' })).status,
    ).toBe(404);
  });

  it("lists the caller's own sessions, newest first, and nobody else's", async () => {
    const ida = await acme.user('ida', 'editor');
    const jon = await acme.user('jon', 'editor');
    const first = await hub.request('POST', '/sessions', { token: ida.key, body: { task: 'first task' } });
    await new Promise((done) => setTimeout(done, 5));
    const second = await hub.request('POST', '/sessions', { token: ida.key, body: { task: 'second task' } });
    await hub.request('POST', '/sessions', { token: jon.key, body: { task: "jon's task" } });
    const list = await hub.request('GET', '/sessions', { token: ida.key, template: '/sessions' });
    expect(list.status).toBe(200);
    expect(list.body.items.map((x: { id: string }) => x.id)).toEqual([second.body.session.id, first.body.session.id]);
    expect((await hub.request('GET', '/sessions?limit=1', { token: ida.key, template: '/sessions' })).body.items).toHaveLength(1);
    expect((await hub.request('GET', '/sessions?limit=0', { token: ida.key, template: '/sessions' })).status).toBe(400);
    expect((await hub.request('GET', '/sessions', { token: jon.key })).body.items.map((x: { task: string }) => x.task)).toEqual([
      "jon's task",
    ]);
  });
});
