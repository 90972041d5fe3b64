import type { Database, OpenTransaction, Queryable } from '../contracts.js';
import { inlineParams } from './sql.js';

// The database as one write request sees it: every query of the request runs in one
// transaction, so the request's changes and its audit row commit together or not at all. The
// transaction begins at the first query (work before it, such as fetching a pack by URL, holds
// no connection and no lock); transactions opened inside it (the engine's write units) become
// savepoints, so one that fails undoes only itself, as it would on its own.

export class RequestDatabase implements Database {
  readonly kind: Database['kind'];
  readonly hasVector: boolean;
  private tx: Promise<OpenTransaction> | undefined;
  private savepoints = 0;
  /** The savepoint of the last unit that succeeded, until the next one releases it. */
  private unreleased: string | undefined;
  /** Nested transactions run one at a time: savepoints on one connection must not interleave. */
  private nested: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Database) {
    this.kind = db.kind;
    this.hasVector = db.hasVector;
  }

  /** Whether any query ran (and so a transaction is open). */
  get begun(): boolean {
    return this.tx !== undefined;
  }

  private open(): Promise<OpenTransaction> {
    return (this.tx ??= this.db.begin());
  }

  async query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> {
    return (await this.open()).query<R>(sql, params);
  }

  async exec(sql: string): Promise<void> {
    return (await this.open()).exec(sql);
  }

  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const run = this.nested.then(async () => {
      const tx = await this.open();
      const name = `svc_sp_${++this.savepoints}`;
      const previous = this.unreleased;
      // The savepoint is set in the round trip of the unit's first statement, and the previous
      // unit's released in it too (a write's last one is released by COMMIT): fewer round trips,
      // and none of its own while a lock is held.
      let pending: string | undefined = `${previous ? `RELEASE SAVEPOINT ${previous}; ` : ''}SAVEPOINT ${name}`;
      this.unreleased = undefined;
      const take = (): string | undefined => {
        const script = pending;
        pending = undefined;
        return script;
      };
      const q: Queryable = {
        query: (sql, params) => {
          const script = take();
          return script ? tx.queryAfter(script, sql, params) : tx.query(sql, params);
        },
        exec: (sql) => {
          const script = take();
          return tx.exec(script ? `${script}; ${sql}` : sql);
        },
      };
      try {
        const result = await fn(q);
        // A unit that ran no statement set no savepoint: the previous one is still to release.
        this.unreleased = pending === undefined ? name : previous;
        return result;
      } catch (err) {
        if (pending === undefined) await tx.exec(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`).catch(() => undefined);
        else this.unreleased = previous;
        throw err;
      }
    });
    this.nested = run.catch(() => undefined);
    return run;
  }

  begin(): Promise<OpenTransaction> {
    // eslint-disable-next-line no-restricted-syntax -- a bug in the caller (nested begin), an internal error
    throw new Error('a request database is one transaction already');
  }

  listen(channel: string, onPayload: (payload: string) => void, onResume?: () => void): Promise<() => Promise<void>> {
    return this.db.listen(channel, onPayload, onResume);
  }

  /**
   * Runs one statement as the request's last unit and commits with it, in one round trip when
   * its parameters can be written in. Resolves true when both happened; false when the statement
   * failed (undone: the transaction is open for what the caller does instead); rejects when the
   * commit failed.
   */
  async commitWith(sql: string, params: unknown[]): Promise<boolean> {
    await this.nested;
    const inlined = inlineParams(sql, params);
    if (inlined === undefined) {
      const done = await this.transaction((q) => q.query(sql, params)).then(
        () => true,
        () => false,
      );
      if (done) await this.commit();
      return done;
    }
    const tx = await this.open();
    const name = `svc_sp_${++this.savepoints}`;
    const release = this.unreleased ? `RELEASE SAVEPOINT ${this.unreleased}; ` : '';
    this.unreleased = undefined;
    try {
      await tx.commitAfter(`${release}SAVEPOINT ${name}; ${inlined}`);
      return true;
    } catch (err) {
      // The statement failed and the COMMIT did not run: back to before it. If that cannot be
      // done, the COMMIT was what failed.
      const undone = await tx.exec(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`).then(
        () => true,
        () => false,
      );
      if (!undone) throw err;
      return false;
    }
  }

  async commit(): Promise<void> {
    if (this.tx) await (await this.tx).commit();
  }

  async rollback(): Promise<void> {
    const tx = await this.tx?.catch(() => undefined);
    await tx?.rollback().catch(() => undefined);
  }

  close(): Promise<void> {
    // eslint-disable-next-line no-restricted-syntax -- a bug in the caller (close instead of commit/rollback), an internal error
    throw new Error('a request database is closed by committing or rolling back');
  }
}
