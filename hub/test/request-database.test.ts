import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database, OpenTransaction } from '../contracts.js';
import { RequestDatabase } from '../data/request-database.js';
import { inlineParams } from '../data/sql.js';
import { openDatabase } from '../data/database.js';
import { PreparedStatements } from '../data/prepared-statements.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// A write request's transaction: each unit is a savepoint, set in the round trip of the unit's
// first statement (whose parameters are then written in as literals). What a literal says must
// be exactly what the parameter said, and a unit that fails must undo only itself. A deferred
// statement rides with the next round trip; when it fails, nothing of the request commits.

/**
 * The database with each call on a transaction (a round trip) counted, but those that prepare a
 * statement (a deferred one's first time on its connection: one round trip, once).
 */
function counting(db: Database): { db: Database; trips: () => number } {
  let trips = 0;
  let prepares = 0;
  const wrapped: Database = Object.create(db) as Database;
  wrapped.begin = async () => {
    const tx = await db.begin();
    const count =
      <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
      (...a: A): Promise<R> => {
        trips++;
        if (a.some((x) => typeof x === 'string' && /\bPREPARE svc_/.test(x))) prepares++;
        return f(...a);
      };
    return {
      query: count(tx.query.bind(tx)),
      exec: count(tx.exec.bind(tx)),
      queryAfter: count(tx.queryAfter.bind(tx)),
      commitAfter: count(tx.commitAfter.bind(tx)),
      commit: count(tx.commit.bind(tx)),
      rollback: tx.rollback.bind(tx),
      prepared: tx.prepared.bind(tx),
    } as OpenTransaction;
  };
  return { db: wrapped, trips: () => trips - prepares };
}

const notes = async (db: Database, from: number): Promise<Array<{ n: number; note: string }>> =>
  (await db.query<{ n: number; note: string }>('SELECT n, note FROM rdb_units WHERE n >= $1 AND n < $1 + 10 ORDER BY n', [from])).rows;

describe.each(DATABASES)('the request database (%s)', (kind) => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await freshDatabase(kind);
    await t.db.exec('CREATE TABLE rdb_units (n int PRIMARY KEY, note text)');
  }, 60_000);
  afterAll(async () => t?.close());

  it('writes parameters in as literals that read back equal to the parameters themselves', async () => {
    const tricky = ["it's", 'back\\slash', 'quote " and \\" both', 'ünï 😀', '', '$1 inside', 'line\nbreak'];
    const params = [tricky, [1.5, -2, 0], [null, 'x'], true, 42, "E'\\x'", null];
    const sql = 'SELECT $1::text[] AS a, $2::float8[] AS b, $3::text[] AS c, $4::boolean AS d, $5::int AS e, $6::text AS f, $7::text AS g';
    const inlined = inlineParams(sql, params);
    expect(inlined).toMatch(/^SELECT E?'\{"it''s",/); // the first parameter, now a literal
    const direct = (await t.db.query(sql, params)).rows[0];
    const literal = (await t.db.query(inlined!)).rows[0];
    expect(literal).toEqual(direct);
    expect(direct).toEqual({ a: tricky, b: [1.5, -2, 0], c: [null, 'x'], d: true, e: 42, f: "E'\\x'", g: null });
  });

  it('leaves a parameter with no plain literal to the parameter', () => {
    expect(inlineParams('SELECT $1', [new Date()])).toBeUndefined();
    expect(inlineParams('SELECT $1', [{ a: 1 }])).toBeUndefined();
    expect(inlineParams('SELECT $2', ['one'])).toBeUndefined();
    expect(inlineParams('SELECT $1', ['nul \0 inside'])).toBeUndefined();
    expect(inlineParams('SELECT $1', [['ok', 'nul \0 inside']])).toBeUndefined();
  });

  it('undoes only the unit that failed, on its first statement or a later one, and commits the others', async () => {
    const rdb = new RequestDatabase(t.db);
    await rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [1, "first's"]));
    await expect(rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [1, 'clash']))).rejects.toThrow();
    await expect(
      rdb.transaction(async (q) => {
        await q.query('INSERT INTO rdb_units VALUES ($1, $2)', [2, 'undone']);
        await q.query('INSERT INTO rdb_units VALUES ($1, $2)', [1, 'clash']);
      }),
    ).rejects.toThrow();
    // A unit that runs no statement sets no savepoint, and the next one still releases the last.
    await rdb.transaction(async () => undefined);
    await rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [3, 'third']));
    await rdb.commit();
    const rows = (await t.db.query<{ n: number; note: string }>('SELECT n, note FROM rdb_units ORDER BY n')).rows;
    expect(rows).toEqual([
      { n: 1, note: "first's" },
      { n: 3, note: 'third' },
    ]);
  });
  it('sends a deferred statement with the commit: a write of two round trips, lock and read, then the rest', async () => {
    const c = counting(t.db);
    const rdb = new RequestDatabase(c.db);
    await rdb.transaction(async (q) => {
      await q.query('SELECT count(*) FROM rdb_units WHERE n = $1', [100]);
      await q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [100, 'deferred']);
    });
    expect(c.trips()).toBe(1);
    expect(await rdb.commitWith('INSERT INTO rdb_units VALUES ($1, $2)', [101, 'with the commit'])).toBe(true);
    expect(c.trips()).toBe(2);
    expect(await notes(t.db, 100)).toEqual([
      { n: 100, note: 'deferred' },
      { n: 101, note: 'with the commit' },
    ]);
  });

  it('reads with a prepared statement after a script, in one round trip with what went before, the PREPARE once per connection', async () => {
    const c = counting(t.db);
    const rdb = new RequestDatabase(c.db);
    await rdb.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [190, 'deferred']));
    const read = (n: number) =>
      rdb.transaction((q) =>
        q.queryPrepared<{ note: string }>(
          `INSERT INTO rdb_units VALUES (${n}, 'before')`,
          'SELECT note FROM rdb_units WHERE n >= $1 ORDER BY n',
          [190],
        ),
      );
    expect((await read(191)).rows).toEqual([{ note: 'deferred' }, { note: 'before' }]);
    expect((await read(192)).rows).toEqual([{ note: 'deferred' }, { note: 'before' }, { note: 'before' }]);
    expect(c.trips()).toBe(2);
    await rdb.commit();
    expect(await notes(t.db, 190)).toHaveLength(3);
  });

  it('runs a deferred statement before anything that reads after it, in the same round trip', async () => {
    const c = counting(t.db);
    const rdb = new RequestDatabase(c.db);
    await rdb.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [110, 'seen']));
    const seen = await rdb.transaction((q) => q.query<{ note: string }>('SELECT note FROM rdb_units WHERE n = $1', [110]));
    expect(seen.rows).toEqual([{ note: 'seen' }]);
    expect(c.trips()).toBe(1);
    await rdb.commit();
    expect(await notes(t.db, 110)).toEqual([{ n: 110, note: 'seen' }]);
  });

  it('fails the whole request when a deferred statement fails: the commit rejects and nothing is written', async () => {
    await t.db.query('INSERT INTO rdb_units VALUES ($1, $2)', [120, 'already there']);
    // Failing in the commit's round trip.
    const a = new RequestDatabase(t.db);
    await a.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [121, 'before']));
    await a.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [120, 'clash']));
    await expect(a.commitWith('INSERT INTO rdb_units VALUES ($1, $2)', [122, 'audit row'])).rejects.toThrow();
    await expect(a.commit()).rejects.toThrow();
    await a.rollback();
    // Failing in the next unit's first round trip: that unit rejects, and so does every later call.
    const b = new RequestDatabase(t.db);
    await b.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [120, 'clash']));
    await expect(b.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [123, 'next unit']))).rejects.toThrow();
    // (PostgreSQL answers COMMIT on an aborted transaction with a silent ROLLBACK.)
    await expect(b.commit()).rejects.toThrow();
    await b.rollback();
    const d = new RequestDatabase(t.db);
    await d.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [120, 'clash']));
    await expect(d.transaction((q) => q.query('SELECT 1'))).rejects.toThrow();
    await expect(d.query('SELECT 1')).rejects.toThrow();
    await expect(d.commitWith('INSERT INTO rdb_units VALUES ($1, $2)', [124, 'audit row'])).rejects.toThrow();
    await expect(d.commit()).rejects.toThrow();
    await d.rollback();
    // Failing with a plain commit.
    const c = new RequestDatabase(t.db);
    await c.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [120, 'clash']));
    await expect(c.commit()).rejects.toThrow();
    await c.rollback();
    expect(await notes(t.db, 120)).toEqual([{ n: 120, note: 'already there' }]);
  });

  it('undoes with its unit a statement the unit deferred before its first query', async () => {
    const rdb = new RequestDatabase(t.db);
    await rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [150, 'before']));
    await expect(
      rdb.transaction(async (q) => {
        await q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [151, 'deferred, then undone']);
        await q.query('INSERT INTO rdb_units VALUES ($1, $2)', [150, 'clash']);
      }),
    ).rejects.toThrow();
    await rdb.commit();
    expect(await notes(t.db, 150)).toEqual([{ n: 150, note: 'before' }]);
  });

  it('keeps a deferred statement that succeeded when the statement sent with it fails, and drops one whose unit failed', async () => {
    const rdb = new RequestDatabase(t.db);
    await rdb.transaction((q) => q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [130, 'kept']));
    await expect(
      rdb.transaction(async (q) => {
        await q.defer!('INSERT INTO rdb_units VALUES ($1, $2)', [131, 'its unit threw']);
        throw new Error('the unit fails before sending anything');
      }),
    ).rejects.toThrow('the unit fails');
    // The statement that goes with the commit fails alone (as a stale audit head does): the caller
    // does something else and commits.
    expect(await rdb.commitWith('INSERT INTO rdb_units VALUES ($1, $2)', [130, 'clash'])).toBe(false);
    await rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [132, 'instead']));
    await rdb.commit();
    expect(await notes(t.db, 130)).toEqual([
      { n: 130, note: 'kept' },
      { n: 132, note: 'instead' },
    ]);
  });
  it('prepares a deferred statement once on a connection, and after a round trip that failed with a PREPARE starts again', async () => {
    // One connection, so that each request meets what the one before left on it.
    const single = kind === 'postgres' ? await openDatabase({ url: t.url!, poolSize: 1 }) : t.db;
    const sent: string[] = [];
    const spying: Database = Object.create(single) as Database;
    spying.begin = async () => {
      const tx = await single.begin();
      const exec = tx.exec.bind(tx);
      const commitAfter = tx.commitAfter.bind(tx);
      tx.exec = (sql) => (sent.push(sql), exec(sql));
      tx.commitAfter = (script, ran) => (sent.push(script), commitAfter(script, ran));
      return tx;
    };
    const write = async (sql: string, params: unknown[]) => {
      const rdb = new RequestDatabase(spying);
      try {
        await rdb.transaction((q) => q.defer!(sql, params));
        await rdb.commit();
      } catch (err) {
        await rdb.rollback();
        throw err;
      }
    };
    // Statements no other test defers.
    const a = 'INSERT INTO rdb_units (n, note) VALUES ($1, $2)';
    const b = 'INSERT INTO rdb_units (note, n) VALUES ($2, $1)';
    try {
      await write(a, [170, 'prepared']);
      await write(a, [171, 'executed']);
      expect(sent.filter((x) => x.includes('PREPARE'))).toHaveLength(1);
      // A PREPARE sent after a statement that fails may or may not have run: the next
      // preparation starts from nothing, and every statement is prepared again.
      const failing = new RequestDatabase(spying);
      await failing.transaction((q) => q.defer!(a, [170, 'clash']));
      await expect(failing.transaction((q) => q.defer!(b, [172, 'never']))).rejects.toThrow();
      await failing.rollback();
      await write(b, [173, 'after DEALLOCATE ALL']);
      const preparations = () => sent.filter((x) => x.includes('PREPARE'));
      expect(preparations().at(-1)).toMatch(/DEALLOCATE ALL; PREPARE svc_\w+ AS INSERT INTO rdb_units \(note, n\) VALUES/);
      await write(a, [174, 'prepared again']);
      expect(preparations().at(-1)).toMatch(/SAVEPOINT svc_sp_1; PREPARE svc_\w+ AS INSERT INTO rdb_units \(n, note\)/);
      // A statement sent with the commit whose PREPARE ran and whose EXECUTE failed: its
      // preparation is kept all the same.
      const c = 'INSERT INTO rdb_units (note, n) SELECT $2, $1';
      const clash = new RequestDatabase(spying);
      expect(await clash.commitWith(c, [174, 'clash'])).toBe(false);
      await clash.commit();
      expect(preparations().filter((x) => x.includes('SELECT $2, $1'))).toHaveLength(1);
      const after = new RequestDatabase(spying);
      expect(await after.commitWith(c, [175, 'with the commit'])).toBe(true);
      expect(sent.at(-1)).not.toContain('PREPARE');
    } finally {
      if (single !== t.db) await single.close();
    }
    expect(await notes(t.db, 170)).toEqual([
      { n: 170, note: 'prepared' },
      { n: 171, note: 'executed' },
      { n: 173, note: 'after DEALLOCATE ALL' },
      { n: 174, note: 'prepared again' },
      { n: 175, note: 'with the commit' },
    ]);
  });
  it.runIf(kind === 'postgres')('sends BEGIN with the first statement, and nothing for a transaction that ran none', async () => {
    const { default: pg } = await import('pg');
    const sent: string[] = [];
    const original = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (
      this: InstanceType<typeof pg.Client>,
      ...args: unknown[]
    ) {
      const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text;
      sent.push(String(text));
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    } as never);
    try {
      const rdb = new RequestDatabase(t.db);
      await rdb.transaction((q) => q.query('INSERT INTO rdb_units VALUES ($1, $2)', [140, 'first']));
      await rdb.commit();
      const idle = await t.db.begin();
      await idle.commit();
    } finally {
      spy.mockRestore();
    }
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^BEGIN; SAVEPOINT svc_sp_1;\nINSERT INTO rdb_units VALUES \('140', 'first'\)$/);
    expect(sent[1]).toBe('COMMIT');
    expect(await notes(t.db, 140)).toEqual([{ n: 140, note: 'first' }]);
  });
});

describe('prepared statements on one connection', () => {
  it('keeps at most 64: a new one deallocates the least recently used', () => {
    const kept = new PreparedStatements();
    const names = Array.from({ length: 64 }, (_, i) => {
      const p = kept.use(`SELECT ${i}`);
      p.done();
      return p.name;
    });
    expect(kept.use('SELECT 0').script).toBeUndefined(); // used again: now the most recent
    const next = kept.use('SELECT 64');
    expect(next.script).toBe(`DEALLOCATE ${names[1]}; PREPARE ${next.name} AS SELECT 64`);
    next.done();
    expect(kept.use('SELECT 1').script).toMatch(/^DEALLOCATE svc_\w+; PREPARE/);
  });

  it('trusts nothing it keeps after a preparation whose round trip failed', () => {
    const kept = new PreparedStatements();
    const a = kept.use('SELECT 1');
    a.done();
    expect(kept.use('SELECT 2').script).toMatch(/^PREPARE/); // sent, and its round trip failed: done() never called
    // That round trip may have deallocated everything: the kept one is prepared again.
    const again = kept.use('SELECT 1');
    expect(again.script).toBe(`DEALLOCATE ALL; PREPARE ${a.name} AS SELECT 1`);
    again.done();
    expect(kept.use('SELECT 1').script).toBeUndefined();
  });
});
