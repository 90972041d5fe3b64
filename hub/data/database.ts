import { setTimeout as sleep } from 'node:timers/promises';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { Database, OpenTransaction } from '../contracts.js';
import { SvcError } from '../../engine/errors.js';
import { processRuns } from '../../engine/process-runs.js';
import { inlineParams } from './sql.js';
import { PreparedStatements, queryPrepared } from './prepared-statements.js';

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
  /** Longest statement (ms; default SVC_HUB_STATEMENT_TIMEOUT seconds, else 30 s; 0: none). */
  statementTimeoutMs?: number;
  /** Longest a transaction may sit idle before it is ended (ms; default SVC_HUB_IDLE_TRANSACTION_TIMEOUT seconds, else 60 s; 0: none). */
  idleTransactionTimeoutMs?: number;
  /** What a lock on the PGlite folder says holds it (default "svc hub"). */
  holder?: string;
  /** A use that runs a few statements (a test): PGlite with a small buffer cache (pgliteStart; default: whether runShortLived() was called). */
  shortLived?: boolean;
  env?: NodeJS.ProcessEnv;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  const env = opts.env ?? process.env;
  const timeouts = {
    statementMs: opts.statementTimeoutMs ?? seconds(env, 'SVC_HUB_STATEMENT_TIMEOUT', 30) * 1000,
    idleMs: opts.idleTransactionTimeoutMs ?? seconds(env, 'SVC_HUB_IDLE_TRANSACTION_TIMEOUT', 60) * 1000,
  };
  return opts.url
    ? openPostgres(opts.url, opts.poolSize ?? 10, timeouts)
    : openPglite(opts.dataDir, timeouts.idleMs, opts.holder ?? 'svc hub', opts.shortLived);
}

/** Set by runShortLived(): every PGlite this process opens is short-lived. */
let shortLivedProcess = false;

/**
 * For a process that opens PGlite, runs a few statements and exits (every `svc hub` subcommand),
 * called once before anything opens:
 * - V8 compiles WebAssembly with its baseline compiler only. By default it also optimizes the
 *   Postgres functions that run hot, on background threads, which a short command pays for and
 *   never gets back: `svc hub org list` took 2.0 s and 2.5 s of CPU so, 1.1 s and 0.9 s without
 *   (2 cores, `node -e 0` 130 ms).
 * - Each PGlite it opens is short-lived (pgliteStart).
 * A serving hub keeps the defaults: its queries run for days.
 */
export function runShortLived(): void {
  setFlagsFromString('--liftoff-only');
  shortLivedProcess = true;
}

/**
 * Starts PGlite on a data folder (in memory without one). A serving hub keeps PostgreSQL's 128 MB
 * buffer cache. A short-lived use (a process after runShortLived(), a test) gets 16 MB:
 * PostgreSQL sets up the whole cache at start, and a process that runs a few statements paid for
 * 128 MB it never used, most of it the kernel handing over memory: a start and close took
 * 0.75–0.9 s, 0.3–0.4 s with 16 MB (warm process, 2 cores, `node -e 0` 100 ms).
 */
export async function pgliteStart(dataDir: string | undefined, shortLived = shortLivedProcess) {
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  return PGlite.create({
    ...(dataDir ? { dataDir } : {}),
    extensions: { vector },
    ...(shortLived ? { startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'] } : {}),
  });
}

/** Seconds from the environment (0 allowed: no limit); a clear error when it is not a whole number. */
function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new SvcError('invalid', `${name} must be a whole number of seconds, 0 for no limit (got "${raw}")`);
  return n;
}

async function openPostgres(url: string, max: number, timeouts: { statementMs: number; idleMs: number }): Promise<Database> {
  const { default: pg } = await import('pg');
  // int8 (counts, sequences) as numbers: every count here fits in 2^53.
  pg.types.setTypeParser(20, (v) => Number(v));
  // JIT off: the hub runs short OLTP queries, and a misestimated plan (small tables without
  // statistics yet) would otherwise spend half a second compiling one of them.
  // The server ends what a request left behind: a statement that runs too long, and a transaction
  // left idle (its client gone, a bug) that would otherwise hold its connection and locks forever.
  const options = `-c jit=off -c statement_timeout=${timeouts.statementMs} -c idle_in_transaction_session_timeout=${timeouts.idleMs}`;
  const pool = new pg.Pool({ connectionString: url, max, options });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);

  // What each connection holds prepared: the pool hands its connections out again and again.
  const preparedOn = new WeakMap<object, PreparedStatements>();
  const begin = async (): Promise<OpenTransaction> => {
    const client = await pool.connect();
    let prepared = preparedOn.get(client);
    if (!prepared) preparedOn.set(client, (prepared = new PreparedStatements()));
    // A session the server ends (idle_in_transaction_session_timeout) errors while checked out,
    // where the pool listens no more: without this listener the process would crash.
    const onError = () => undefined;
    client.on('error', onError);
    let released = false;
    // BEGIN goes in the round trip of the transaction's first statement: one round trip fewer
    // per transaction, and a transaction that ran nothing ends without any.
    let begun = false;
    const opening = (script?: string): string | undefined => {
      if (begun) return script;
      begun = true;
      return script ? `BEGIN; ${script}` : 'BEGIN';
    };
    const end = async (sql: 'COMMIT' | 'ROLLBACK') => {
      if (released) return;
      released = true;
      client.removeListener('error', onError);
      try {
        if (begun) await client.query(sql);
        client.release();
      } catch (err) {
        // A connection whose COMMIT or ROLLBACK failed is not handed out again.
        client.release(err as Error);
        if (sql === 'COMMIT') throw err;
      }
    };
    const queryAfter = async <R>(script: string | undefined, sql: string, params?: unknown[]): Promise<{ rows: R[] }> => {
      if (!script) return { rows: (await client.query(sql, params as unknown[])).rows as R[] };
      const inlined = inlineParams(sql, params);
      if (inlined === undefined) {
        await client.query(script);
        return { rows: (await client.query(sql, params as unknown[])).rows as R[] };
      }
      // Several statements answer one result each.
      const results = (await client.query(`${script};\n${inlined}`)) as unknown as Array<{ rows: R[] }>;
      return { rows: results[results.length - 1]!.rows };
    };
    const tx: OpenTransaction = {
      query: (sql, params) => queryAfter(opening(), sql, params),
      exec: async (sql) => void (await client.query(opening(sql)!)),
      queryAfter: (script, sql, params) => queryAfter(opening(script), sql, params),
      commitAfter: async (script, ran) => {
        await client.query(`${opening(script)!};\nCOMMIT`);
        ran?.();
        released = true;
        client.removeListener('error', onError);
        client.release();
      },
      commit: () => end('COMMIT'),
      rollback: () => end('ROLLBACK'),
      prepared: (sql) => prepared.use(sql),
      queryPrepared: (before, sql, params) => queryPrepared(tx, before, sql, params),
    };
    return tx;
  };
  const probe = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'");
  const db: Database = {
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
    async listen(channel, onPayload, onResume) {
      // A connection of its own: LISTEN holds its session; the pool's connections come and go.
      // When it is lost (the server restarted, an admin ended it) it is made again, waiting
      // 250 ms, then twice as long each time up to 5 s, and the listener told to catch up.
      let client: InstanceType<typeof pg.Client> | undefined;
      let stopped = false;
      let reconnecting = false;
      const connect = async (): Promise<void> => {
        const c = new pg.Client({ connectionString: url });
        c.on('notification', (n) => n.channel === channel && onPayload(n.payload ?? ''));
        c.on('error', () => undefined);
        c.on('end', () => {
          if (client === c) void reconnect();
        });
        try {
          await c.connect();
          await c.query(`LISTEN ${JSON.stringify(channel)}`);
        } catch (err) {
          await c.end().catch(() => undefined);
          throw err;
        }
        if (stopped) return void (await c.end().catch(() => undefined));
        client = c;
      };
      const reconnect = async (): Promise<void> => {
        if (reconnecting || stopped) return;
        reconnecting = true;
        client = undefined;
        for (let wait = 250; !stopped; wait = Math.min(wait * 2, 5_000)) {
          await sleep(wait, undefined, { ref: false });
          if (stopped) break;
          try {
            await connect();
            reconnecting = false;
            onResume?.();
            return;
          } catch {
            /* the database is still away: wait longer */
          }
        }
        reconnecting = false;
      };
      await connect();
      return async () => {
        stopped = true;
        const c = client;
        client = undefined;
        await c?.end().catch(() => undefined);
      };
    },
    close: () => pool.end(),
  };
  pools.set(db, () => ({ size: max, open: pool.totalCount, inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }));
  return db;
}

async function openPglite(dataDir: string | undefined, idleMs: number, holder: string, shortLived?: boolean): Promise<Database> {
  const unlock = dataDir ? lockDataDir(dataDir, holder) : () => undefined;
  let db: Awaited<ReturnType<typeof pgliteStart>>;
  try {
    db = await pgliteStart(dataDir, shortLived);
  } catch (err) {
    unlock();
    throw err;
  }
  // PGlite is one connection: a call in flight holds it, the others wait (what the pool gauges show).
  let inFlight = 0;
  // PGlite is one connection: one set of prepared statements.
  const prepared = new PreparedStatements();
  // One connection in this process: a script and the statement after it save no round trip by
  // going together, and planning is not what they wait on. So they run in turn, unprepared.
  type Tx = Pick<typeof db, 'exec' | 'query'>;
  const after = async (tx: Tx, script: string, sql: string, params?: unknown[]) => {
    await tx.exec(script);
    return { rows: (await tx.query(sql, params as unknown[])).rows as never[] };
  };
  const held = async <T>(work: () => Promise<T>): Promise<T> => {
    inFlight++;
    try {
      return await work();
    } finally {
      inFlight--;
    }
  };
  const handle: Database = {
    kind: 'pglite',
    hasVector: true,
    query: (sql, params) => held(async () => ({ rows: (await db.query(sql, params as unknown[])).rows as never[] })),
    exec: (sql) => held(async () => void (await db.exec(sql))),
    transaction: (fn) =>
      held(() =>
        db.transaction(async (tx) =>
          fn({
            query: async (sql, params) => ({ rows: (await tx.query(sql, params as unknown[])).rows as never[] }),
            exec: async (sql) => void (await tx.exec(sql)),
            queryPrepared: (before, sql, params) => after(tx, before, sql, params),
          }),
        ),
      ),
    // PGlite's transactions are callbacks: this one waits inside its callback until the caller
    // commits or rolls back. PGlite is one connection, so everything else waits meanwhile; a
    // transaction left idle longer than idleMs is rolled back, as PostgreSQL's
    // idle_in_transaction_session_timeout would, so one abandoned request cannot freeze the hub.
    begin: () =>
      new Promise<OpenTransaction>((opened, failed) => {
        inFlight++;
        let finish!: (commit: boolean) => void;
        const ended = new Promise<boolean>((r) => (finish = r));
        let settled: Promise<unknown> | undefined;
        let abandoned = false;
        let timer: NodeJS.Timeout | undefined;
        const idle = () => {
          clearTimeout(timer);
          if (idleMs <= 0) return;
          timer = setTimeout(() => {
            abandoned = true;
            finish(false);
          }, idleMs);
          timer.unref();
        };
        const busy = async <T>(run: () => Promise<T>): Promise<T> => {
          // eslint-disable-next-line no-restricted-syntax -- the holder stalled past the idle limit: the server's fault, a logged 500
          if (abandoned) throw new Error(`the transaction was idle for more than ${idleMs / 1000} s and was rolled back`);
          clearTimeout(timer);
          try {
            return await run();
          } finally {
            idle();
          }
        };
        const commit = async (): Promise<void> => {
          // eslint-disable-next-line no-restricted-syntax -- as above: the server's fault, a logged 500
          if (abandoned) throw new Error(`the transaction was idle for more than ${idleMs / 1000} s and was rolled back`);
          finish(true);
          await settled;
        };
        const run = db.transaction(async (tx) => {
          idle();
          opened({
            query: (sql, params) => busy(async () => ({ rows: (await tx.query(sql, params as unknown[])).rows as never[] })),
            exec: (sql) => busy(async () => void (await tx.exec(sql))),
            queryAfter: (script, sql, params) => busy(() => after(tx, script, sql, params)),
            commitAfter: async (script, ran) => {
              await busy(() => tx.exec(script));
              ran?.();
              await commit();
            },
            commit,
            rollback: async () => {
              finish(false);
              await settled!.catch(() => undefined);
            },
            prepared: (sql) => prepared.use(sql),
            queryPrepared: (before, sql, params) => busy(() => after(tx, before, sql, params)),
          });
          const committed = await ended;
          clearTimeout(timer);
          if (!committed) throw ROLLED_BACK;
        });
        settled = run;
        run.catch((err) => (err === ROLLED_BACK ? undefined : failed(err))).finally(() => inFlight--);
      }),
    // PGlite runs in this process: its subscription cannot be lost.
    async listen(channel, onPayload) {
      const unsubscribe = await db.listen(channel, onPayload);
      return async () => void (await unsubscribe());
    },
    close: async () => {
      try {
        await db.close();
      } finally {
        unlock();
      }
    },
  };
  pools.set(handle, () => ({ size: 1, open: 1, inUse: Math.min(1, inFlight), waiting: Math.max(0, inFlight - 1) }));
  return handle;
}

/** A database handle's connections: how many it may open, has open, has in use, and callers waiting for one. */
export interface PoolStats {
  size: number;
  open: number;
  inUse: number;
  waiting: number;
}

const pools = new WeakMap<Database, () => PoolStats>();

/** The connections of a handle openDatabase made (undefined for any other Database). */
export function poolStats(db: Database): PoolStats | undefined {
  return pools.get(db)?.();
}

/** Another process has the PGlite folder open. */
export class DataFolderInUse extends Error {
  override name = 'DataFolderInUse';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
    readonly holder: string,
  ) {
    super(`the data folder ${dataDir} is in use by ${holder} (pid ${pid})`);
  }
}

const LOCK_FILE = 'svc-hub.lock';
/** The lock files this process holds. */
const lockedHere = new Set<string>();

/**
 * PGlite is one process's database: two on one folder each keep their own copy in memory and
 * overwrite each other's writes. The folder's lock is a file holding the opener's pid, created
 * exclusively (atomic); a lock whose pid no longer runs is stale and taken over. Returns the release.
 */
export function lockDataDir(dataDir: string, holder: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, holder }) + '\n';
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, mine, { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
    }
    let other: { pid?: unknown; holder?: unknown } = {};
    try {
      other = JSON.parse(readFileSync(file, 'utf8')) as typeof other;
    } catch {
      // Unreadable (cut short while being written): no live process stands behind it.
    }
    const pid = typeof other.pid === 'number' ? other.pid : 0;
    // Our own pid on a folder this process does not hold: left by an earlier life of a process
    // that had the same pid (a container restarted), so stale too.
    const held = pid === process.pid ? lockedHere.has(file) : pid > 0 && processRuns(pid);
    if (held) throw new DataFolderInUse(dataDir, pid, typeof other.holder === 'string' ? other.holder : 'svc hub');
    rmSync(file, { force: true });
  }
  lockedHere.add(file);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    lockedHere.delete(file);
    try {
      if (readFileSync(file, 'utf8') === mine) rmSync(file, { force: true });
    } catch {
      // Gone already.
    }
  };
}

const ROLLED_BACK = new Error('rolled back by the caller');
