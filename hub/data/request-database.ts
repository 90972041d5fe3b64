import type { Database, OpenTransaction, Transaction } from '../contracts.js';
import { executeStatement, literalParams } from './sql.js';
import { preparedCall, queryPrepared } from './prepared-statements.js';

// The database as one write request sees it: every query of the request runs in one
// transaction, so the request's changes and its audit row commit together or not at all. The
// transaction begins at the first query (work before it, such as fetching a pack by URL, holds
// no connection and no lock); transactions opened inside it (the engine's write units) become
// savepoints, so one that fails undoes only itself, as it would on its own.
//
// A unit may defer a statement whose answer it does not wait for (an engram's write): it goes
// in the transaction's next round trip, for a create the one that appends the audit row and
// commits. Under the organization's write lock that is one round trip fewer per write. A
// deferred statement that fails fails the request: nothing commits. It goes as the EXECUTE of a
// statement prepared on the connection (its first time there, a PREPARE in the unit's round trip).

export class RequestDatabase implements Database {
  readonly kind: Database['kind'];
  readonly hasVector: boolean;
  private tx: Promise<OpenTransaction> | undefined;
  private savepoints = 0;
  /** The savepoint of the last unit that succeeded, until the next one releases it. */
  private unreleased: string | undefined;
  /** Nested transactions run one at a time: savepoints on one connection must not interleave. */
  private nested: Promise<unknown> = Promise.resolve();
  /** Deferred statements, parameters written in, not sent yet; each with the savepoint of its unit. */
  private deferred: Array<{ unit: string; sql: string }> = [];
  /**
   * The error that left the transaction unable to commit (a statement failed with no savepoint
   * to go back to): every later call rejects with it, so no caller can take PostgreSQL's
   * silent ROLLBACK of an aborted transaction for a COMMIT.
   */
  private failed: { error: unknown } | undefined;

  /** `start` opens the transaction (by default one of its own; a write request's takes turns in a group, write-groups.ts). */
  constructor(
    private readonly db: Database,
    private readonly start: () => Promise<OpenTransaction> = () => db.begin(),
  ) {
    this.kind = db.kind;
    this.hasVector = db.hasVector;
  }

  /** Whether any query ran (and so a transaction is open). */
  get begun(): boolean {
    return this.tx !== undefined;
  }

  private open(): Promise<OpenTransaction> {
    return (this.tx ??= this.start());
  }

  async query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> {
    const tx = await this.usable();
    const script = this.takeDeferred();
    return this.failing(script ? tx.queryAfter<R>(script, sql, params) : tx.query<R>(sql, params));
  }

  async exec(sql: string): Promise<void> {
    const tx = await this.usable();
    const script = this.takeDeferred();
    return this.failing(tx.exec(script ? `${script}; ${sql}` : sql));
  }

  /** The open transaction, unless it can no longer commit. */
  private async usable(): Promise<OpenTransaction> {
    if (this.failed) throw this.failed.error;
    return this.open();
  }

  /** A statement outside any unit: when it fails, the transaction is aborted for good. */
  private async failing<T>(run: Promise<T>): Promise<T> {
    try {
      return await run;
    } catch (err) {
      this.failed ??= { error: err };
      throw err;
    }
  }

  /** The deferred statements (those `which` picks) as one script to go before the next statement; they are no longer deferred. */
  private takeDeferred(which: (d: { unit: string }) => boolean = () => true): string | undefined {
    const taken = this.deferred.filter(which);
    if (taken.length === 0) return undefined;
    this.deferred = this.deferred.filter((d) => !which(d));
    return taken.map((d) => d.sql).join(';\n');
  }

  transaction<T>(fn: (q: Transaction) => Promise<T>): Promise<T> {
    const run = this.nested.then(async () => {
      const tx = await this.usable();
      const name = `svc_sp_${++this.savepoints}`;
      const previous = this.unreleased;
      // The savepoint is set in the round trip of the unit's first statement, and the previous
      // unit's released in it too (a write's last one is released by COMMIT): fewer round trips,
      // and none of its own while a lock is held.
      let pending: string | undefined = `${previous ? `RELEASE SAVEPOINT ${previous}; ` : ''}SAVEPOINT ${name}`;
      this.unreleased = undefined;
      // What goes before the statement: earlier units' deferred statements (before their
      // savepoint's release), this unit's savepoint when it is not set yet, then this unit's own.
      const take = (): string | undefined => {
        const earlier = this.takeDeferred((d) => d.unit !== name);
        const mine = this.takeDeferred((d) => d.unit === name);
        const script = [earlier, pending, mine].filter((x) => x !== undefined).join('; ');
        pending = undefined;
        return script || undefined;
      };
      const q: Transaction = {
        query: (sql, params) => {
          const script = take();
          return script ? tx.queryAfter(script, sql, params) : tx.query(sql, params);
        },
        exec: (sql) => {
          const script = take();
          return tx.exec(script ? `${script}; ${sql}` : sql);
        },
        defer: async (sql, params) => {
          // As a prepared statement: its plan is kept on the connection (prepared-statements.ts).
          const literals = literalParams(params);
          if (literals === undefined) return void (await q.query(sql, params));
          const call = await preparedCall({ prepared: (text) => tx.prepared(text), exec: q.exec }, sql, literals);
          this.deferred.push({ unit: name, sql: call });
        },
        queryPrepared: (before, sql, params) =>
          queryPrepared(
            {
              prepared: (text) => tx.prepared(text),
              exec: (text) => q.exec(text),
              queryAfter: (script, text, p) => {
                const earlier = take();
                return tx.queryAfter(earlier ? `${earlier}; ${script}` : script, text, p);
              },
            },
            before,
            sql,
            params,
          ),
      };
      try {
        const result = await fn(q);
        // A unit that ran no statement set no savepoint: the previous one is still to release.
        this.unreleased = pending === undefined ? name : previous;
        return result;
      } catch (err) {
        // What it deferred and did not send is dropped with it.
        this.deferred = this.deferred.filter((d) => d.unit !== name);
        if (pending === undefined) {
          // When the savepoint cannot be gone back to, what failed came before it was set (an
          // earlier unit's deferred statement): the transaction is aborted, it cannot commit.
          await tx.exec(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`).catch(() => {
            this.failed ??= { error: err };
          });
        } else this.unreleased = previous;
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
    if (this.failed) throw this.failed.error;
    const literals = literalParams(params);
    if (literals === undefined) {
      const done = await this.transaction((q) => q.query(sql, params)).then(
        () => true,
        () => false,
      );
      if (done) await this.commit();
      return done;
    }
    const tx = await this.open();
    // As a prepared statement, as a deferred one is; its PREPARE, the first time on this
    // connection, goes after the savepoint, so that when it fails (a table gone) the statement
    // fails alone, as it would unprepared.
    const preparing = tx.prepared(sql);
    const call = executeStatement(preparing.name, literals);
    const name = `svc_sp_${++this.savepoints}`;
    const deferred = this.takeDeferred();
    const release = this.unreleased ? `RELEASE SAVEPOINT ${this.unreleased}; ` : '';
    this.unreleased = undefined;
    try {
      const statement = preparing.script ? `${preparing.script}; ${call}` : call;
      // What the connection holds prepared is noted as soon as the statement ran: a write that
      // shares its COMMIT is answered later, and the next write on the connection runs before.
      await tx.commitAfter(`${deferred ? `${deferred}; ` : ''}${release}SAVEPOINT ${name}; ${statement}`, () => preparing.done());
      return true;
    } catch (err) {
      // The statement failed and the COMMIT did not run: back to before it. If that cannot be
      // done, what failed came before the savepoint (a deferred statement) or was the COMMIT.
      const undone = await tx.exec(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`).then(
        () => true,
        () => false,
      );
      if (!undone) {
        this.failed ??= { error: err };
        throw err;
      }
      // A PREPARE that went with a statement that failed (an audit row chained to a head another
      // process has moved) has most often run: noted so, it is not sent again and again.
      const prepared = preparing.script
        ? await tx.query('SELECT 1 FROM pg_prepared_statements WHERE name = $1', [preparing.name]).then(
            (r) => r.rows.length > 0,
            () => false,
          )
        : false;
      if (prepared) preparing.done();
      return false;
    }
  }

  async commit(): Promise<void> {
    await this.nested;
    if (this.failed) throw this.failed.error;
    if (!this.tx) return;
    const tx = await this.tx;
    const deferred = this.takeDeferred();
    await (deferred ? tx.commitAfter(deferred) : tx.commit());
  }

  async rollback(): Promise<void> {
    this.deferred = [];
    const tx = await this.tx?.catch(() => undefined);
    await tx?.rollback().catch(() => undefined);
  }

  close(): Promise<void> {
    // eslint-disable-next-line no-restricted-syntax -- a bug in the caller (close instead of commit/rollback), an internal error
    throw new Error('a request database is closed by committing or rolling back');
  }
}
