import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { DataFolderInUse, openDatabase } from '../data/database.js';
import { DATABASES, freshDatabase, type TestDatabase } from './support/databases.js';

// The database's own backstops (issue 25, item 2): a transaction a request abandoned is ended by
// the database (PostgreSQL's idle_in_transaction_session_timeout, and the same rule on PGlite's
// one connection), so no bug or vanished client can hold the hub's connections forever.

describe.each(DATABASES)('an abandoned transaction (%s)', (kind) => {
  const opened: TestDatabase[] = [];
  afterAll(async () => {
    for (const d of opened) await d.close();
  });

  it('is rolled back once idle past the limit, and everything else goes on', async () => {
    const fresh = await freshDatabase(kind);
    let db = fresh.db;
    if (kind === 'postgres') {
      opened.push(fresh);
      db = await openDatabase({ url: fresh.url!, idleTransactionTimeoutMs: 500 });
      opened.unshift({ db, close: () => db.close() });
    } else {
      await fresh.db.close();
      db = await openDatabase({ dataDir: fresh.dataDir!, idleTransactionTimeoutMs: 500 });
      opened.push({ db, close: () => db.close() });
    }
    const tx = await db.begin();
    await tx.query('SELECT 1');
    // Nothing ends it: the limit does. Meanwhile PGlite's one connection would be taken.
    const other = await db.query<{ n: number }>('SELECT 2 AS n');
    expect(other.rows[0]!.n).toBe(2);
    if (kind === 'postgres') {
      for (let i = 0; i < 100; i++) {
        const n = (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
          )
        ).rows[0]!.n;
        if (n === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await expect(tx.commit()).rejects.toThrow();
    expect((await db.query<{ n: number }>('SELECT 3 AS n')).rows[0]!.n).toBe(3);
  }, 30_000);
});

describe('the PostgreSQL pool', () => {
  it.runIf(DATABASES.includes('postgres'))(
    'sets a statement timeout and an idle-in-transaction timeout, 30 s and 60 s unless configured',
    async () => {
      const fresh = await freshDatabase('postgres');
      try {
        const show = async (db: Awaited<ReturnType<typeof openDatabase>>) => [
          (await db.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows[0]!.statement_timeout,
          (await db.query<{ idle_in_transaction_session_timeout: string }>('SHOW idle_in_transaction_session_timeout')).rows[0]!
            .idle_in_transaction_session_timeout,
        ];
        expect(await show(fresh.db)).toEqual(['30s', '1min']);
        const tuned = await openDatabase({
          url: fresh.url!,
          env: { SVC_HUB_STATEMENT_TIMEOUT: '5', SVC_HUB_IDLE_TRANSACTION_TIMEOUT: '0' },
        });
        expect(await show(tuned)).toEqual(['5s', '0']);
        await tuned.close();
        await expect(openDatabase({ url: fresh.url!, env: { SVC_HUB_STATEMENT_TIMEOUT: 'soon' } })).rejects.toThrow(
          'SVC_HUB_STATEMENT_TIMEOUT must be a whole number of seconds, 0 for no limit (got "soon")',
        );
      } finally {
        await fresh.close();
      }
    },
  );
});

// Two processes on one PGlite folder each keep their own copy and overwrite each other (item 20):
// the folder is locked by a file holding the opener's pid.
describe('the PGlite data folder lock', () => {
  it('refuses a second opener while the first has it, and takes over a lock whose process is gone', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'svc-lock-')), 'data');
    const first = await openDatabase({ dataDir: dir });
    const lock = join(dir, 'svc-hub.lock');
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toEqual({ pid: process.pid, holder: 'svc hub' });
    const refused = await openDatabase({ dataDir: dir }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DataFolderInUse);
    expect((refused as DataFolderInUse).pid).toBe(process.pid);
    await first.close();
    expect(existsSync(lock)).toBe(false);

    // A process that ended without closing leaves its lock behind: stale.
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(lock, JSON.stringify({ pid: Number(gone), holder: 'svc hub' }));
    const again = await openDatabase({ dataDir: dir });
    expect(JSON.parse(readFileSync(lock, 'utf8')).pid).toBe(process.pid);
    await again.close();

    // This very pid, on a folder this process does not hold: an earlier life of a process with
    // the same pid (pid 1 in a restarted container).
    writeFileSync(lock, JSON.stringify({ pid: process.pid, holder: 'svc hub' }));
    const restarted = await openDatabase({ dataDir: dir });
    await restarted.close();
  }, 60_000);
});
