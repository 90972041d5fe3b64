import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RequestDatabase } from '../data/request-database.js';
import { inlineParams } from '../data/sql.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// A write request's transaction: each unit is a savepoint, set in the round trip of the unit's
// first statement (whose parameters are then written in as literals). What a literal says must
// be exactly what the parameter said, and a unit that fails must undo only itself.

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
});
