import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { EVERY_ROUTE } from './support/every-route.js';

// An organization never reads or writes another's data, by any route: a token of `beta` (even
// its admin's) sees 404 for every resource of `acme`, and its lists and searches never show one.

describe.each(DATABASES)('cross-organization isolation (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  let beta: TestOrg;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    hub = await startTestHub(kind);
    acme = await hub.newOrg('acme');
    beta = await hub.newOrg('beta');
    const a = acme.adminKey;
    ids.engram = (
      await hub.request('POST', '/engrams', {
        token: a,
        body: { statement: 'Acme secret sauce recipe lives in the vault', scope: 'org:acme' },
      })
    ).body.id;
    ids.global = (
      await hub.request('POST', '/engrams', { token: a, body: { statement: 'Acme global convention about sauce', scope: 'global' } })
    ).body.id;
    ids.episode = (await hub.request('POST', '/episodes', { token: a, body: { summary: 'Acme sauce episode' } })).body.id;
    ids.session = (await hub.request('POST', '/sessions', { token: a, body: { task: 'sauce' } })).body.session.id;
    const u = await hub.request('POST', '/admin/users', { token: a, body: { name: 'alex' } });
    ids.user = u.body.id;
    ids.group = (await hub.request('POST', '/admin/groups', { token: a, body: { path: 'kitchen' } })).body.id;
    ids.key = (await hub.request('POST', '/admin/api-keys', { token: a, body: { user_id: u.body.id } })).body.id;
  }, 60_000);
  afterAll(async () => hub?.close());

  it('answers 401 with a problem document on every route without a valid token', async () => {
    for (const [method, path, body] of EVERY_ROUTE) {
      for (const token of [undefined, 'svc_sk_' + 'A'.repeat(43), 'not-a-token']) {
        const r = await hub.request(method, path, { token, body });
        expect(r.status, `${method} ${path} ${token}`).toBe(401);
        expect(r.body.type, `${method} ${path}`).toMatch(/invalid-token$/);
      }
    }
  });

  it('answers 404 for every resource of another organization, on every route', async () => {
    const b = beta.adminKey;
    const e = ids.engram!;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/engrams/${e}`],
      ['PATCH', `/engrams/${e}`, { tags: ['stolen'] }],
      ['DELETE', `/engrams/${e}`],
      ['POST', `/engrams/${e}/feedback`, { signal: 'negative' }],
      ['POST', `/engrams/${e}/promote`],
      ['POST', `/engrams/${e}/pin`, { pinned: true }],
      ['GET', `/engrams/${ids.global}`],
      ['GET', `/episodes/${ids.episode}`],
      ['GET', `/sessions/${ids.session}`],
      ['POST', `/sessions/${ids.session}/end`, { summary: 'hijack' }],
      ['POST', `/admin/groups/${ids.group}/members`, { user_id: ids.user }],
      ['DELETE', `/admin/api-keys/${ids.key}`],
    ];
    for (const [method, path, body] of attempts) {
      const r = await hub.request(method, path, { token: b, body });
      expect([404, 400], `${method} ${path}`).toContain(r.status);
      expect(r.text, `${method} ${path}`).not.toMatch(/sauce|Acme/i);
    }
    // And nothing changed on acme's side.
    const still = await hub.request('GET', `/engrams/${e}`, { token: acme.adminKey });
    expect(still.body).toMatchObject({ status: 'active', pinned: false, tags: [] });
    expect(still.body.feedback_signals.negative).toBe(0);
    expect((await hub.request('GET', `/sessions/${ids.session}`, { token: acme.adminKey })).body.status).toBe('open');
  });

  it("never lists or finds another organization's data", async () => {
    const b = beta.adminKey;
    const reads: Array<[string, string, unknown?]> = [
      ['GET', '/engrams'],
      ['GET', '/engrams?scope=global'],
      ['POST', '/recall', { query: 'sauce recipe vault' }],
      ['POST', '/recall/bm25', { query: 'sauce' }],
      ['POST', '/inject', { task: 'sauce recipe' }],
      ['GET', '/episodes?q=sauce'],
      ['GET', '/admin/users'],
      ['GET', '/admin/groups'],
      ['GET', '/admin/api-keys'],
      ['GET', '/admin/audit'],
      ['GET', '/admin/insights'],
      ['GET', '/me'],
    ];
    for (const [method, path, body] of reads) {
      const r = await hub.request(method, path, { token: b, body });
      expect(r.status, `${method} ${path}`).toBe(200);
      // What came back (the request's own words echoed in `query` or `task` aside).
      const payload = JSON.stringify(r.body.results ?? r.body.blocks ?? r.body.items ?? r.body);
      expect(payload, `${method} ${path}`).not.toMatch(/sauce|acme|alex|kitchen/i);
    }
    expect((await hub.request('POST', '/engrams', { token: b, body: { statement: 'x', scope: 'org:acme' } })).status).toBe(403);
    expect((await hub.request('GET', '/engrams?scope=org:acme', { token: b })).status).toBe(403);
  });
});
