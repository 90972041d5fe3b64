import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReservingCounter } from '../limits/reserving-counter.js';
import { DEFAULT_RATE_LIMITS, windowStart } from '../limits/rate-limit.js';
import { CONTROL_SCHEMA } from '../data/sql.js';
import { createOrg } from '../data/organizations.js';
import type { Org } from '../contracts.js';
import { awayFromMinuteEdge } from './support/hub-process.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// Request counts reserved in the database in blocks before they are used: every admitted request
// is counted, and any number of counters (processes) sharing the database admit no more than the
// quota, bursts included.

describe.each(DATABASES)('the reserving rate-limit counter (%s)', (kind) => {
  let t: TestDatabase;
  let org: Org;
  beforeAll(async () => {
    t = await freshDatabase(kind);
    org = await createOrg(t.db, 'counted');
  }, 60_000);
  afterAll(async () => t?.close());

  const stored = async (token: string, bucket = 'requests'): Promise<number> =>
    Number(
      (
        await t.db.query<{ hits: number }>(
          `SELECT coalesce(sum(hits), 0) AS hits FROM ${CONTROL_SCHEMA}.rate_limits WHERE token_key = $1 AND bucket = $2 AND window_start = $3`,
          [`${org.id}:${token}`, bucket, windowStart(Date.now())],
        )
      ).rows[0]!.hits,
    );

  it('has every request it admitted counted in the database before it was admitted, in blocks', async () => {
    await awayFromMinuteEdge();
    const counter = new ReservingCounter(t.db);
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 100_000 };
    for (let round = 0; round < 4; round++) {
      const decisions = await Promise.all(Array.from({ length: 50 }, () => counter.take(org, 'many', false, limits)));
      expect(decisions.every((d) => d.allowed)).toBe(true);
    }
    const counted = await stored('many');
    expect(counted).toBeGreaterThanOrEqual(200);
    // Reserved in blocks of a twentieth of the quota: at most one block unused.
    expect(counted).toBeLessThan(200 + 100_000 / 20);
  });

  it('lets two processes together through no more than the quota, one by one or in a burst', async () => {
    await awayFromMinuteEdge();
    const a = new ReservingCounter(t.db);
    const b = new ReservingCounter(t.db);
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 20 };
    const sequential: boolean[] = [];
    for (let i = 0; i < 30; i++) sequential.push((await (i % 2 ? a : b).take(org, 'pair', false, limits)).allowed);
    expect(sequential.filter(Boolean)).toHaveLength(20);
    expect(sequential.slice(20)).toEqual(Array(10).fill(false));
    const burst = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).take(org, 'burst', false, limits)));
    expect(burst.filter((d) => d.allowed).length).toBeLessThanOrEqual(20);
  });

  it('holds a write quota of 60 against bursts of 64 concurrent writers over two processes, round after round', async () => {
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 100_000, writesPerMinute: 60 };
    for (let round = 0; round < 5; round++) {
      await awayFromMinuteEdge();
      const a = new ReservingCounter(t.db);
      const b = new ReservingCounter(t.db);
      const token = `writers-${round}`;
      const got = await Promise.all(Array.from({ length: 64 }, (_, i) => (i % 2 ? a : b).take(org, token, true, limits)));
      const allowed = got.filter((d) => d.allowed).length;
      expect(allowed).toBeLessThanOrEqual(60);
      expect(allowed).toBeGreaterThanOrEqual(55);
      // And a second wave in the same minute gets nothing more than the quota left.
      const again = await Promise.all(Array.from({ length: 64 }, (_, i) => (i % 2 ? a : b).take(org, token, true, limits)));
      expect(allowed + again.filter((d) => d.allowed).length).toBeLessThanOrEqual(60);
      expect(await stored(token, 'writes')).toBeGreaterThanOrEqual(allowed);
    }
  }, 120_000);
});
