import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from './support/databases.js';
import { startTestHub, type TestHub, type TestOrg } from './support/hub-fixture.js';
import { awayFromMinuteEdge, startHubProcess, type HubProcess } from './support/hub-process.js';
import { startHub, type RunningHub } from '../server/start.js';
import { EVERY_ROUTE } from './support/every-route.js';

describe.each(DATABASES)('rate limits (%s)', (kind) => {
  let hub: TestHub;
  let acme: TestOrg;

  beforeAll(async () => {
    hub = await startTestHub(kind, { rateLimits: { perMinute: 8, writesPerMinute: 3 } });
    acme = await hub.newOrg('acme');
  }, 60_000);
  afterAll(async () => hub?.close());

  it('reports the state in RateLimit-* headers and answers 429 with Retry-After, writes limited apart', async () => {
    await awayFromMinuteEdge();
    const user = await acme.user('rita', 'editor');
    const first = await hub.request('GET', '/me', { token: user.key });
    expect(first.headers.get('ratelimit-limit')).toBe('8');
    expect(first.headers.get('ratelimit-remaining')).toBe('7');
    expect(Number(first.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    const writes = [];
    for (let i = 0; i < 4; i++) writes.push(await hub.request('POST', '/engrams', { token: user.key, body: { statement: `Limited write ${i}` }, template: '/engrams' }));
    expect(writes.map((w) => w.status)).toEqual([201, 201, 201, 429]);
    expect(writes[2]!.headers.get('ratelimit-limit')).toBe('3');
    const limited = writes[3]!;
    expect(limited.body).toMatchObject({ status: 429, type: expect.stringMatching(/rate-limited$/) });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Reads still pass until the general limit: 1 + 4 so far, 3 more.
    const reads = [];
    for (let i = 0; i < 4; i++) reads.push((await hub.request('GET', '/me', { token: user.key })).status);
    expect(reads).toEqual([200, 200, 200, 429]);
    // Another token has its own budget.
    expect((await hub.request('GET', '/me', { token: acme.adminKey })).status).toBe(200);
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
    for (const [i, [method, path, body]] of EVERY_ROUTE.entries()) {
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
    await awayFromMinuteEdge(20);
    const org = await hub.newOrg('shared');
    const user = await org.user('sue', 'editor');
    second = await startHub({ db: hub.db, rateLimits: { perMinute: 6, writesPerMinute: 6 }, log: () => undefined });
    child = await startHubProcess({ DATABASE_URL: hub.database.url!, SVC_HUB_RATE_LIMIT: '6', SVC_HUB_WRITE_RATE_LIMIT: '6' });
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
      expect(await verifyAudit(hub.db, org.org, hub.running.hub.config.auditKey)).toEqual({ ok: true, rows: 500 });
      const count = await hub.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${org.org.schema}.engrams`);
      expect(Number(count.rows[0]!.n)).toBe(500);
    }
  }, 120_000);
});
