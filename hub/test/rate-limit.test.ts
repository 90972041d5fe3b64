import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { awayFromMinuteEdge, startHubProcess, type HubProcess } from './support/hub-process.js';
import { startHub, type RunningHub } from '../start.js';
import { EVERY_ROUTE } from './support/every-route.js';

describe.each(DATABASES)('rate limits (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 8, writesPerMinute: 3 } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('reports RateLimit-Policy and RateLimit as the IETF draft has them, and answers 429 with Retry-After, writes limited apart', async () => {
    await awayFromMinuteEdge();
    const user = await acme.user('rita', 'editor');
    const first = await hub.request('GET', '/me', { token: user.key });
    expect(first.headers.get('ratelimit-policy')).toBe('"requests";q=8;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"requests";r=7;t=\d+$/);
    expect(first.headers.get('ratelimit-limit')).toBeNull();
    const writes = [];
    for (let i = 0; i < 4; i++)
      writes.push(
        await hub.request('POST', '/engrams', { token: user.key, body: { statement: `Limited write ${i}` }, template: '/engrams' }),
      );
    expect(writes.map((w) => w.status)).toEqual([201, 201, 201, 429]);
    expect(writes[2]!.headers.get('ratelimit-policy')).toBe('"requests";q=8;w=60, "writes";q=3;w=60');
    expect(writes[2]!.headers.get('ratelimit')).toMatch(/^"requests";r=4;t=\d+, "writes";r=0;t=\d+$/);
    const limited = writes[3]!;
    expect(limited.body).toMatchObject({ status: 429, type: expect.stringMatching(/rate-limited$/), 'violated-policies': ['writes'] });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Reads still pass until the general limit: 1 + 4 so far, 3 more.
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push((await hub.request('GET', '/me', { token: user.key })).status);
    expect(reads).toEqual([200, 200, 200, 429]);
    // Another token has its own budget.
    expect((await hub.request('GET', '/me', { token: acme.adminKey })).status).toBe(200);
  });

  it('counts recall, inject and export as reads, and DELETE as a write', async () => {
    await awayFromMinuteEdge();
    const user = await acme.user('wes', 'editor');
    const id = (await hub.request('POST', '/engrams', { token: user.key, body: { statement: 'Counted once' } })).body.id;
    for (const [method, path, body] of [
      ['POST', '/recall', { query: 'counted' }],
      ['POST', '/recall/bm25', { query: 'counted' }],
      ['POST', '/inject', { task: 'counted' }],
      ['POST', '/packs/export', { name: 'p' }],
    ] as const) {
      const r = await hub.request(method, path, { token: user.key, body });
      expect(r.headers.get('ratelimit-policy'), path).toBe('"requests";q=8;w=60');
    }
    const del = await hub.request('DELETE', `/engrams/${id}`, { token: user.key });
    expect(del.status).toBe(200);
    expect(del.headers.get('ratelimit')).toMatch(/"writes";r=1;/);
  });
});

describe.each(DATABASES)('rate limits on every route (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 2, writesPerMinute: 1 } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('answers 429 with a problem document once a token is over its limit, whatever the route', async () => {
    await awayFromMinuteEdge();
    // DELETE /me/token ends the very token it is called with: its second call is a 401.
    for (const [i, [method, path, body]] of EVERY_ROUTE.filter(([m, p]) => !(m === 'DELETE' && p === '/me/token')).entries()) {
      const { key } = await acme.user(`u${i}`, 'admin');
      let last;
      for (let n = 0; n < 3; n++) last = await hub.request(method, path, { token: key, body });
      expect(last!.status, `${method} ${path}`).toBe(429);
      expect(last!.body.type, `${method} ${path}`).toMatch(/rate-limited$/);
      expect(Number(last!.headers.get('retry-after')), `${method} ${path}`).toBeGreaterThan(0);
    }
  }, 120_000);
});

describe.runIf(DATABASES.includes('postgres'))('two hub processes on one PostgreSQL database', () => {
  let hub: TestHub;
  let child: HubProcess | undefined;
  let second: RunningHub | undefined;

  beforeAll(async () => {
    hub = await startTestHub('postgres', { rateLimits: { perMinute: 100_000, writesPerMinute: 100_000 } });
  }, 60_000);
  afterAll(async () => {
    await child?.stop();
    await second?.close();
    await hub?.close();
  });

  it('share one rate-limit count per token', async () => {
    const org = await hub.newOrg('shared');
    const user = await org.user('sue', 'editor');
    second = await startHub({ db: hub.db, rateLimits: { perMinute: 6, writesPerMinute: 6 }, log: () => undefined });
    child = await startHubProcess({ DATABASE_URL: hub.database.url!, SVC_HUB_RATE_LIMIT: '6', SVC_HUB_WRITE_RATE_LIMIT: '6' });
    // The eight requests take well under a second: only they need to share one minute's window.
    await awayFromMinuteEdge(5);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const base = i % 2 === 0 ? second.url : child.url;
      const r = await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${user.key}` } });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    await child.stop();
    child = undefined;
    await second.close();
    second = undefined;
  }, 60_000);

  it('1,000 concurrent writes through both processes leave one unbroken audit chain per organization', async () => {
    const { verifyAudit } = await import('../audit/audit-log.js');
    const orgs = [await hub.newOrg('north'), await hub.newOrg('south')];
    child = await startHubProcess({ DATABASE_URL: hub.database.url!, SVC_HUB_RATE_LIMIT: '100000', SVC_HUB_WRITE_RATE_LIMIT: '100000' });
    const targets = [hub.url, child.url];
    const jobs: Array<() => Promise<number>> = [];
    for (let i = 0; i < 1000; i++) {
      const org = orgs[i % 2]!;
      const base = targets[Math.floor(i / 2) % 2]!;
      jobs.push(async () => {
        const r = await fetch(`${base}/api/v1/engrams`, {
          method: 'POST',
          headers: { authorization: `Bearer ${org.adminKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ statement: `Concurrent rule ${i} of ${org.org.slug}`, scope: `org:${org.org.slug}` }),
        });
        await r.arrayBuffer();
        return r.status;
      });
    }
    const statuses: number[] = [];
    const CONCURRENCY = 50;
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < jobs.length) statuses.push(await jobs[next++]!());
      }),
    );
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect(await child.stop()).toBe(0);
    child = undefined;
    await hub.running.hub.audit.drain();
    for (const org of orgs) {
      expect(await verifyAudit(hub.db, org.org, hub.running.hub.config.auditKey)).toMatchObject({ ok: true, rows: 500, gaps: [] });
      const count = await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${org.org.schema}.engrams`);
      expect(Number(count.rows[0]!.n)).toBe(500);
    }
  }, 120_000);
});

describe.each(DATABASES)('sliding windows and failed authentication (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;
  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 5, writesPerMinute: 5, authFailuresPerMinute: 3 } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('lets no minute boundary through twice the limit', async () => {
    const { takeToken } = await import('../limits/rate-limit.js');
    const limits = hub.running.hub.config.rateLimits;
    const minute = Math.floor(Date.now() / 60_000) * 60_000 + 600_000;
    const at = (s: number) => takeToken(hub.db, acme.org, 'boundary', false, limits, minute + s * 1000);
    const before = [];
    for (let i = 0; i < 6; i++) before.push((await at(59.5)).allowed);
    expect(before).toEqual([true, true, true, true, true, false]);
    // A second into the next minute, the last one still counts almost whole (refusals count too).
    const after = await at(60.5);
    expect(after.allowed).toBe(false);
    expect(after.retryAfter).toBeGreaterThan(5);
    // Three quarters of a minute on, a quarter of the last minute still weighs: two more, not five.
    const later = [];
    for (let i = 0; i < 5; i++) later.push((await at(105)).allowed);
    expect(later).toEqual([true, true, false, false, false]);
  });

  it('limits failed authentication per address; tokens this hub already knows carry on', async () => {
    await awayFromMinuteEdge();
    const known = await acme.user('kim', 'editor');
    expect((await hub.request('GET', '/me', { token: known.key })).status).toBe(200);
    const fresh = await acme.user('fay', 'editor');
    const bad = [];
    for (let i = 0; i < 4; i++) bad.push(await hub.request('GET', '/me', { token: `svc_sk_wrongwrongwrongwrongwrong${i}` }));
    expect(bad.map((r) => r.status)).toEqual([401, 401, 401, 429]);
    expect(bad[0]!.headers.get('ratelimit-policy')).toBe('"auth-failures";q=3;w=60');
    expect(bad[3]!.body).toMatchObject({ 'violated-policies': ['auth-failures'] });
    expect(Number(bad[3]!.headers.get('retry-after'))).toBeGreaterThan(0);
    // Over the limit, a token never seen here is not looked at; a known one still works.
    expect((await hub.request('GET', '/me', { token: fresh.key })).status).toBe(429);
    expect((await hub.request('GET', '/me', { token: known.key })).status).toBe(200);
  });
});
