import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Org } from '../contracts.js';
import { WriteGroups } from '../data/write-groups.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// Group commit: the writes of one organization that arrive while one runs take turns in its
// transaction and share its COMMIT. Each is answered only after that COMMIT, each that fails is
// undone alone, and a COMMIT that fails fails every write in it.

const org = (n: number): Org => ({ id: `wg-${n}`, slug: `wg-${n}`, schema: `org_wg_${n}`, idPrefix: 'WG' });

describe.each(DATABASES)('write groups (%s)', (kind) => {
  let t: TestDatabase;
  let groups: WriteGroups;
  beforeAll(async () => {
    t = await freshDatabase(kind);
    await t.db.exec(`CREATE TABLE wg_rows (n int PRIMARY KEY, note text);
      CREATE TABLE wg_deferred (k int, CONSTRAINT wg_once UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)`);
    groups = new WriteGroups(t.db);
  }, 60_000);
  afterAll(async () => t?.close());

  const rows = async (from: number) =>
    (await t.db.query<{ n: number }>('SELECT n FROM wg_rows WHERE n >= $1 AND n < $1 + 100 ORDER BY n', [from])).rows.map((r) => r.n);

  /** One write: inserts n; answers the transaction it ran in and whether its rows were all visible to others when it was answered. */
  const write = async (o: Org, n: number, from: number, total: number) => {
    const tx = await groups.begin(o);
    const { rows: r } = await tx.query<{ x: string }>('INSERT INTO wg_rows VALUES ($1, $2) RETURNING txid_current()::text AS x', [n, 'w']);
    await tx.commit();
    return { txid: r[0]!.x, seen: (await rows(from)).length === total };
  };

  it('runs writes that arrive together in one transaction, and answers each after its COMMIT', async () => {
    const done = await Promise.all(Array.from({ length: 10 }, (_, i) => write(org(1), 100 + i, 100, 10)));
    expect(new Set(done.map((d) => d.txid)).size).toBe(1);
    expect(done.every((d) => d.seen)).toBe(true);
    expect(await rows(100)).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
  });

  it('keeps organizations apart, and a write alone is a transaction of its own', async () => {
    const done = await Promise.all([write(org(2), 200, 200, 2), write(org(3), 201, 200, 2)]);
    expect(done[0]!.txid).not.toBe(done[1]!.txid);
    const alone = await write(org(2), 202, 200, 3);
    expect([done[0]!.txid, done[1]!.txid]).not.toContain(alone.txid);
  });

  it('undoes a write that fails or rolls back alone: the others in its transaction commit', async () => {
    const run = async (n: number) => {
      const tx = await groups.begin(org(4));
      if (n === 302) {
        await tx.query('INSERT INTO wg_rows VALUES (302)');
        await tx.rollback();
        return 'rolled back';
      }
      if (n === 303) {
        // A statement that fails (the key is taken): the transaction is aborted until it goes back.
        await expect(tx.query('INSERT INTO wg_rows VALUES (300)')).rejects.toThrow();
        await tx.rollback();
        return 'failed';
      }
      if (n === 304) {
        // Its last statements fail: its turn goes on, and it writes something else instead.
        await tx.exec('SAVEPOINT mine; INSERT INTO wg_rows VALUES (304)');
        await expect(tx.commitAfter('SELECT 1/0')).rejects.toThrow();
        await tx.exec('ROLLBACK TO SAVEPOINT mine');
        await tx.commitAfter('INSERT INTO wg_rows VALUES (314)');
        return 'recovered';
      }
      await tx.query('INSERT INTO wg_rows VALUES ($1)', [n]);
      await tx.commit();
      return 'committed';
    };
    const outcomes = await Promise.all([300, 301, 302, 303, 304, 305].map(run));
    expect(outcomes).toEqual(['committed', 'committed', 'rolled back', 'failed', 'recovered', 'committed']);
    expect(await rows(300)).toEqual([300, 301, 305, 314]);
  });

  it('fails every write of a COMMIT that fails, and the next writes start anew', async () => {
    const run = async (k: number) => {
      const tx = await groups.begin(org(5));
      await tx.query('INSERT INTO wg_deferred VALUES (1)');
      await tx.query('INSERT INTO wg_rows VALUES ($1)', [k]);
      await tx.commit();
    };
    // Both inserts pass; the deferred unique check fails at the shared COMMIT.
    const outcomes = await Promise.allSettled([run(400), run(401)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(await rows(400)).toEqual([]);
    expect((await t.db.query('SELECT * FROM wg_deferred')).rows).toEqual([]);
    expect((await write(org(5), 402, 400, 1)).seen).toBe(true);
  });

  it('a write whose first member rolls back leaves the writes behind it a transaction of their own', async () => {
    const first = groups.begin(org(6));
    const behind = write(org(6), 501, 500, 2);
    const tx = await first;
    await tx.query('INSERT INTO wg_rows VALUES (500)');
    await tx.rollback();
    const after = write(org(6), 502, 500, 2);
    await Promise.all([behind, after]);
    expect(await rows(500)).toEqual([501, 502]);
  });

  it('lets no write reach a savepoint an earlier write in its transaction left', async () => {
    const a = groups.begin(org(7));
    const b = groups.begin(org(7));
    const ta = await a;
    // A request's last savepoint is left to its COMMIT (request-database.ts).
    await ta.exec('SAVEPOINT svc_sp_1; INSERT INTO wg_rows VALUES (600)');
    const aDone = ta.commit();
    const tb = await b;
    await tb.query('INSERT INTO wg_rows VALUES (601)');
    // Its own svc_sp_1 was never set: going back to it must fail, not undo the write before it.
    await expect(tb.exec('ROLLBACK TO SAVEPOINT svc_sp_1')).rejects.toThrow(/svc_sp_1/);
    await tb.rollback();
    await aDone;
    expect(await rows(600)).toEqual([600]);
  });
});
