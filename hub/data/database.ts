import type { Database, Queryable } from '../contracts.js';

// The hub's database: PostgreSQL through a `pg` pool when a URL is given, else PGlite (PostgreSQL
// compiled to WebAssembly) in a data folder, so a hub runs on a machine with nothing installed.
// Both answer the same SQL; PGlite is one connection, so its transactions serialize.

export interface OpenOptions {
  /** postgres://… : a PostgreSQL server. */
  url?: string;
  /** PGlite's data folder (created when missing); memory when neither is given. */
  dataDir?: string;
  /** Pool size on a server (default 10). */
  poolSize?: number;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return opts.url ? openPostgres(opts.url, opts.poolSize ?? 10) : openPglite(opts.dataDir);
}

async function openPostgres(url: string, max: number): Promise<Database> {
  const { default: pg } = await import('pg');
  // int8 (counts, sequences) as numbers: every count here fits in 2^53.
  pg.types.setTypeParser(20, (v) => Number(v));
  // JIT off: the hub runs short OLTP queries, and a misestimated plan (small tables without
  // statistics yet) would otherwise spend half a second compiling one of them.
  const pool = new pg.Pool({ connectionString: url, max, options: '-c jit=off' });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  const probe = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'");
  return {
    kind: 'postgres',
    hasVector: (probe.rows[0]?.n ?? 0) > 0,
    query: async (sql, params) => ({ rows: (await pool.query(sql, params as unknown[])).rows }),
    exec: async (sql) => void (await pool.query(sql)),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const q: Queryable = {
          query: async (sql, params) => ({ rows: (await client.query(sql, params as unknown[])).rows }),
          exec: async (sql) => void (await client.query(sql)),
        };
        const result = await fn(q);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

async function openPglite(dataDir: string | undefined): Promise<Database> {
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  const db = await PGlite.create(dataDir ? { dataDir, extensions: { vector } } : { extensions: { vector } });
  return {
    kind: 'pglite',
    hasVector: true,
    query: async (sql, params) => ({ rows: (await db.query(sql, params as unknown[])).rows as never[] }),
    exec: async (sql) => void (await db.exec(sql)),
    transaction: (fn) =>
      db.transaction(async (tx) =>
        fn({
          query: async (sql, params) => ({ rows: (await tx.query(sql, params as unknown[])).rows as never[] }),
          exec: async (sql) => void (await tx.exec(sql)),
        }),
      ),
    close: () => db.close(),
  };
}
