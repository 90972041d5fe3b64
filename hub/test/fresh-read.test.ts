import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FreshRead } from '../data/fresh-read.js';
import { ReservingCounter } from '../limits/reserving-counter.js';
import { DEFAULT_RATE_LIMITS } from '../limits/rate-limit.js';
import { authChanged, authEpoch } from '../access/epoch.js';
import { createOrg } from '../data/organizations.js';
import type { Database, Org } from '../contracts.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// Reads that must be current as of their call, shared by the calls that come together: a call
// never gets an answer read before it was made.

interface Pending {
  key: string;
  resolve: (value: number) => void;
  reject: (err: Error) => void;
}

function controlledReads(): { fresh: FreshRead<number>; sent: Pending[] } {
  const sent: Pending[] = [];
  const fresh = new FreshRead<number>((key) => new Promise<number>((resolve, reject) => sent.push({ key, resolve, reject })));
  return { fresh, sent };
}

const settle = () => new Promise<void>((done) => setImmediate(done));

describe('a fresh read shared by the calls that come together', () => {
  it('sends one read when idle; calls made while it is in flight share the next one, sent once it settles', async () => {
    const { fresh, sent } = controlledReads();
    const first = fresh.get('org');
    expect(sent).toHaveLength(1);
    const later = [fresh.get('org'), fresh.get('org'), fresh.get('org')];
    await settle();
    // The read in flight may be older than what these callers saw acknowledged: not theirs.
    expect(sent).toHaveLength(1);
    sent[0]!.resolve(1);
    expect(await first).toBe(1);
    await settle();
    expect(sent).toHaveLength(2);
    sent[1]!.resolve(2);
    expect(await Promise.all(later)).toEqual([2, 2, 2]);
    // Four calls, two reads.
    expect(sent).toHaveLength(2);
    // Idle again: the next call sends at once.
    const again = fresh.get('org');
    expect(sent).toHaveLength(3);
    sent[2]!.resolve(3);
    expect(await again).toBe(3);
  });

  it('fails only the calls a failed read answers, and reads again for those that came after it', async () => {
    const { fresh, sent } = controlledReads();
    const first = fresh.get('org');
    const second = fresh.get('org');
    sent[0]!.reject(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    await settle();
    sent[1]!.resolve(7);
    expect(await second).toBe(7);
  });

  it('reads each key on its own', async () => {
    const { fresh, sent } = controlledReads();
    const a = fresh.get('a');
    const b = fresh.get('b');
    expect(sent.map((s) => s.key)).toEqual(['a', 'b']);
    sent[1]!.resolve(2);
    sent[0]!.resolve(1);
    expect([await a, await b]).toEqual([1, 2]);
  });
});

describe.each(DATABASES)('the authorization epoch read for every request (%s)', (kind) => {
  let t: TestDatabase;
  let org: Org;
  beforeAll(async () => {
    t = await freshDatabase(kind);
    org = await createOrg(t.db, 'fresh-epoch');
  }, 60_000);
  afterAll(async () => t?.close());

  it('answers a request that began after a change with the new epoch, though an older read is still in flight', async () => {
    // The epoch's answers arrive 100 ms after the database gave them: a read is in flight,
    // holding the old epoch, when the change commits and the next request begins.
    const late: Database = Object.create(t.db) as Database;
    late.query = async <R>(sql: string, params?: unknown[]) => {
      const r = await t.db.query<R>(sql, params);
      if (sql.startsWith('SELECT epoch FROM')) await new Promise((done) => setTimeout(done, 100));
      return r;
    };
    const counter = new ReservingCounter(late);
    const limits = { ...DEFAULT_RATE_LIMITS, perMinute: 100_000 };
    // The first request reserves one, the second a block: the requests after it read the epoch alone.
    for (let i = 0; i < 2; i++) await counter.take(org, 'epoch', false, limits);
    const before = await authEpoch(t.db, org);
    const inFlight = counter.take(org, 'epoch', false, limits);
    await new Promise((done) => setTimeout(done, 30));
    await authChanged(t.db, org);
    const after = await Promise.all(Array.from({ length: 5 }, () => counter.take(org, 'epoch', false, limits)));
    expect((await inFlight).epoch).toBe(before);
    expect(after.map((d) => d.epoch)).toEqual(Array(5).fill(before + 1));
  });
});
