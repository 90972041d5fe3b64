import { createHash } from 'node:crypto';
import type { OpenTransaction, Preparing } from '../contracts.js';
import { executeStatement, literalParams } from './sql.js';

// The statements a hot write sends on every request, prepared once per connection. A write's
// statement is sent as literals in a simple query, so that it rides in one round trip with others
// (request-database.ts); PostgreSQL plans such a statement anew each time, and for an engram's
// write (its postings, statistics, events and webhook deliveries in one statement) planning took
// longer than running it. `EXECUTE name(literals)` rides the same way and runs a kept plan.
//
// PREPARE is not transactional: once it ran, the statement stays on the connection whatever
// becomes of the transaction; when it did not run, it does not exist. A round trip that carried
// a PREPARE and failed leaves that unknown, so the next one starts with DEALLOCATE ALL.

/** Most statements kept per connection: the least recently used goes first. */
const MAX_KEPT = 64;

/** What one connection holds prepared. */
export class PreparedStatements {
  private readonly kept = new Map<string, true>();
  private unsure = false;

  use(sql: string): Preparing {
    const name = `svc_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    // After a PREPARE whose fate is unknown (and the DEALLOCATE ALL that may have gone with it),
    // nothing kept can be trusted.
    if (!this.unsure && this.kept.delete(name)) {
      this.kept.set(name, true);
      return { name, done: () => undefined };
    }
    const reset = this.unsure;
    const evicted = !reset && this.kept.size >= MAX_KEPT ? this.kept.keys().next().value : undefined;
    this.unsure = true;
    return {
      name,
      script: `${reset ? 'DEALLOCATE ALL; ' : evicted ? `DEALLOCATE ${evicted}; ` : ''}PREPARE ${name} AS ${sql}`,
      done: () => {
        if (reset) this.kept.clear();
        if (evicted) this.kept.delete(evicted);
        this.kept.set(name, true);
        this.unsure = false;
      },
    };
  }
}

/**
 * `EXECUTE name(literals)` of `sql` prepared on the transaction's connection: the first time
 * there, the PREPARE runs first, in a round trip of its own.
 */
export async function preparedCall(tx: Pick<OpenTransaction, 'prepared' | 'exec'>, sql: string, literals: string[]): Promise<string> {
  const preparing = tx.prepared(sql);
  if (preparing.script) {
    await tx.exec(preparing.script);
    preparing.done();
  }
  return executeStatement(preparing.name, literals);
}

/**
 * `before`, then `sql` as a statement prepared on the transaction's connection, its parameters
 * written in (Transaction.queryPrepared); a parameter without a plain literal runs it unprepared.
 */
export async function queryPrepared<R>(
  tx: Pick<OpenTransaction, 'prepared' | 'exec' | 'queryAfter'>,
  before: string,
  sql: string,
  params: unknown[],
): Promise<{ rows: R[] }> {
  const literals = literalParams(params);
  if (literals === undefined) return tx.queryAfter<R>(before, sql, params);
  return tx.queryAfter<R>(before, await preparedCall(tx, sql, literals));
}
