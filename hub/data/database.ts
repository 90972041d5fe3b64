import type { Database, OpenTransaction } from '../contracts.js';

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

  const begin = async (): Promise<OpenTransaction> => {
    const client = await pool.connect();
    let released = false;
    const end = async (sql: 'COMMIT' | 'ROLLBACK') => {
      if (released) return;
      released = true;
      try {
        await client.query(sql);
        client.release();
      } catch (err) {
        // A connection whose COMMIT or ROLLBACK failed is not handed out again.
        client.release(err as Error);
        if (sql === 'COMMIT') throw err;
      }
    };
    try {
      await client.query('BEGIN');
    } catch (err) {
      client.release(err as Error);
      throw err;
    }
    return {
      query: async (sql, params) => ({ rows: (await client.query(sql, params as unknown[])).rows }),
      exec: async (sql) => void (await client.query(sql)),
      commit: () => end('COMMIT'),
      rollback: () => end('ROLLBACK'),
    };
  };
  const probe = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'");
  return {
    kind: 'postgres',
    hasVector: (probe.rows[0]?.n ?? 0) > 0,
    query: async (sql, params) => ({ rows: (await pool.query(sql, params as unknown[])).rows }),
    exec: async (sql) => void (await pool.query(sql)),
    async transaction(fn) {
      const tx = await begin();
      try {
        const result = await fn(tx);
        await tx.commit();
        return result;
      } catch (err) {
        await tx.rollback();
        throw err;
      }
    },
    begin,
    async listen(channel, onPayload) {
      // A connection of its own: LISTEN holds its session; the pool's connections come and go.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      client.on('notification', (n) => n.channel === channel && onPayload(n.payload ?? ''));
      client.on('error', () => undefined);
      await client.query(`LISTEN ${JSON.stringify(channel)}`);
      return async () => void (await client.end().catch(() => undefined));
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
    // PGlite's transactions are callbacks: this one waits inside its callback until the caller
    // commits or rolls back. PGlite is one connection, so everything else waits meanwhile.
    begin: () =>
      new Promise<OpenTransaction>((opened, failed) => {
        let finish!: (commit: boolean) => void;
        const ended = new Promise<boolean>((r) => (finish = r));
        let settled: Promise<unknown> | undefined;
        const run = db.transaction(async (tx) => {
          opened({
            query: async (sql, params) => ({ rows: (await tx.query(sql, params as unknown[])).rows as never[] }),
            exec: async (sql) => void (await tx.exec(sql)),
            commit: async () => {
              finish(true);
              await settled;
            },
            rollback: async () => {
              finish(false);
              await settled!.catch(() => undefined);
            },
          });
          if (!(await ended)) throw ROLLED_BACK;
        });
        settled = run;
        run.catch((err) => (err === ROLLED_BACK ? undefined : failed(err)));
      }),
    async listen(channel, onPayload) {
      const unsubscribe = await db.listen(channel, onPayload);
      return async () => void (await unsubscribe());
    },
    close: () => db.close(),
  };
}

const ROLLED_BACK = new Error('rolled back by the caller');
