import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchedCounter } from '../limits/batched-counter.js';
import { DEFAULT_RATE_LIMITS, windowStart } from '../limits/rate-limit.js';
import { CONTROL_SCHEMA } from '../data/migrate.js';
import { createOrg } from '../data/organizations.js';
import type { Org } from '../contracts.js';
import { awayFromMinuteEdge } from './support/hub-process.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// Request counts kept in memory and added to the database in batches: none is lost, and past
// half a quota counting is exact again, across counters (processes) sharing the database.

describe.each(DATABASES)('the batched rate-limit counter (%s)', (kind) => {
  let t: TestDatabase;
  let org: Org;
  beforeAll(async () => {
    t = await freshDatabase(kind);
    org = await createOrg(t.db, 'counted');
  }, 60_000);
  afterAll(async () => t?.close());

  const stored = async (token: string): Promise<number> =>
    Number(
      (await t.db.query<{ hits: number }>(`SELECT coalesce(sum(hits), 0) AS hits FROM ${CONTROL_SCHEMA}.rate_limits WHERE token_key = $1 AND bucket = 'requests' AND window_start = $2`, [`${org.id}:${token}`, windowStart(Date.now())]))
        .rows[0]!.hits,
    );

  it('adds every request it counted to the database', async () => {
    await awayFromMinuteEdge();
    const counter = new BatchedCounter(t.db, 20);
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 100_000 };
    for (let round = 0; round < 4; round++) {
      const decisions = await Promise.all(Array.from({ length: 50 }, () => counter.take(org, 'many', false, limits)));
      expect(decisions.every((d) => d.allowed)).toBe(true);
    }
    await counter.flush();
    expect(await stored('many')).toBe(200);
  });

  it('lets two processes together through no more than the quota', async () => {
    await awayFromMinuteEdge();
    const a = new BatchedCounter(t.db, 50);
    const b = new BatchedCounter(t.db, 50);
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 20 };
    const sequential: boolean[] = [];
    for (let i = 0; i < 30; i++) sequential.push((await (i % 2 ? a : b).take(org, 'pair', false, limits)).allowed);
    expect(sequential.filter(Boolean)).toHaveLength(20);
    expect(sequential.slice(20)).toEqual(Array(10).fill(false));
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).take(org, 'burst', false, limits)));
    expect(burst.filter((d) => d.allowed).length).toBeLessThanOrEqual(20);
    await Promise.all([a.flush(), b.flush()]);
    expect(await stored('burst')).toBe(30);
  });
});
