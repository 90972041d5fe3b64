import type { Database, Org, Principal } from '../contracts.js';
import { appendAudit, guessedAppend, type AuditEntry, type AuditWriter } from '../audit/audit-log.js';
import { limitField, policyField, sweepRateLimits, type PolicyName, type RateDecision } from '../limits/rate-limit.js';
import { ReservingCounter } from '../limits/reserving-counter.js';
import type { FailedAuthGuard } from '../limits/failed-auth.js';
import { RequestDatabase } from '../data/request-database.js';
import { WriteGroups } from '../data/write-groups.js';
import type { HubConfig } from '../config.js';
import { authenticate, checkAudience, type Target } from './auth.js';
import { HubProblem } from './problem.js';
import { errorFields, type HubLogger } from '../observe/logger.js';

// What every authenticated surface (REST under /api/v1, MCP over HTTP) does with a caller, in
// order: an address that failed authentication too often is refused before a new token is looked
// at; the bearer token resolves to a principal (cached per process; the organization's
// authorization epoch, read on every request, says when to resolve it again); the token's
// policies are counted (reserving-counter.ts; 429 when over, RateLimit-Policy and RateLimit on
// every answer).
// And how every call runs and is audited (runAudited): a write commits with its audit row, in one transaction.

export type SetHeader = (name: string, value: string) => void;

export interface GateDeps {
  db: Database;
  failedAuth: FailedAuthGuard;
  config: HubConfig;
  audit: AuditWriter;
  log: HubLogger;
}

const MAX_CACHED = 10_000;

export class Gatekeeper {
  private readonly principals = new Map<string, Principal>();
  private lastSweep = 0;
  private readonly counter: ReservingCounter;
  private readonly writes: WriteGroups;

  constructor(readonly deps: GateDeps) {
    this.counter = new ReservingCounter(deps.db);
    this.writes = new WriteGroups(deps.db);
  }

  /** The caller, from the Authorization header; 401 (and a counted failure for the address) when it is not one. */
  async principal(address: string, header: string | undefined, set: SetHeader, target?: Target): Promise<Principal> {
    const p = await this.known(address, header, set);
    checkAudience(p, target);
    return p;
  }

  private async known(address: string, header: string | undefined, set: SetHeader): Promise<Principal> {
    let principal = header ? this.principals.get(header) : undefined;
    if (principal?.expiresAt !== undefined && principal.expiresAt * 1000 <= Date.now()) {
      this.principals.delete(header!);
      principal = undefined;
    }
    this.deps.failedAuth.check(address, principal !== undefined);
    if (principal) return principal;
    try {
      return await this.resolve(header);
    } catch (err) {
      if (err instanceof HubProblem && err.status === 401) await this.deps.failedAuth.failed(address, set);
      throw err;
    }
  }

  /**
   * Counts one request of the principal's token under its policies (and `extra` ones, such as the
   * MCP message route's); returns the principal as of the organization's current epoch. Sets the
   * RateLimit fields; the caller throws `tooMany` when the decision refuses.
   */
  async admit(
    principal: Principal,
    header: string | undefined,
    write: boolean,
    set: SetHeader,
    extra: PolicyName[] = [],
  ): Promise<{ principal: Principal; decision: RateDecision }> {
    if (Date.now() - this.lastSweep > 60_000) {
      this.lastSweep = Date.now();
      void sweepRateLimits(this.deps.db).catch(() => undefined);
    }
    const limits = this.deps.config.rateLimits;
    const decision = await this.counter.take(principal.org, principal.tokenId, write, limits, extra);
    if (decision.epoch !== principal.epoch) {
      // Keys, roles, memberships or packs changed since this principal was resolved.
      this.principals.delete(header!);
      principal = await this.resolve(header);
    }
    set(
      'RateLimit-Policy',
      policyField(
        limits,
        decision.policies.map((p) => p.name),
      ),
    );
    set('RateLimit', limitField(decision.policies));
    return { principal, decision };
  }

  /**
   * Counts one request of a credential that is not a principal (a SCIM token: `key` names it)
   * under the same per-minute policies, and sets the RateLimit fields.
   */
  async admitKey(org: Principal['org'], key: string, write: boolean, set: SetHeader): Promise<RateDecision> {
    const limits = this.deps.config.rateLimits;
    const decision = await this.counter.take(org, key, write, limits);
    set(
      'RateLimit-Policy',
      policyField(
        limits,
        decision.policies.map((p) => p.name),
      ),
    );
    set('RateLimit', limitField(decision.policies));
    return decision;
  }

  private async resolve(header: string | undefined): Promise<Principal> {
    const principal = await authenticate(this.deps.db, this.deps.config.jwt, header);
    if (this.principals.size >= MAX_CACHED) this.principals.clear();
    this.principals.set(header!, principal);
    return principal;
  }

  /**
   * The audited unit, the one way a surface (REST, SCIM, MCP) runs a call: a read runs on the
   * database and its audit row is queued; a write runs in one transaction (RequestDatabase) that
   * commits with its audit row when its outcome is a success, and rolls back, its row queued with
   * the failure's status, when it throws or fails. Engram writes to one organization that
   * arrive together share their COMMIT (write-groups.ts), each still undone alone. If the log
   * cannot take the row with the write (its table unreachable, say) the write still commits and
   * the row waits in the queue: auditing never fails a caller.
   */
  async runAudited<T>(org: Org, unit: AuditedUnit<T>): Promise<T> {
    const { db, audit } = this.deps;
    if (!unit.write) {
      let result: T;
      try {
        result = await unit.work(db);
      } catch (err) {
        audit.record(org, unit.row(unit.failure(err)));
        throw err;
      }
      audit.record(org, unit.row(unit.outcome(result), result));
      return result;
    }
    const rdb = unit.grouped ? new RequestDatabase(db, () => this.writes.begin(org)) : new RequestDatabase(db);
    let result: T;
    try {
      result = await unit.work(rdb);
    } catch (err) {
      await rdb.rollback();
      audit.record(org, unit.row(unit.failure(err)));
      throw err;
    }
    const outcome = unit.outcome(result);
    if (outcome >= 400) {
      await rdb.rollback();
      audit.record(org, unit.row(outcome, result));
      return result;
    }
    await this.commitWithAudit(rdb, org, unit.row(outcome, result));
    return result;
  }

  private async commitWithAudit(rdb: RequestDatabase, org: Org, row: AuditEntry): Promise<void> {
    const { audit, config, log } = this.deps;
    // Most often the chain's head is still the one this process appended last: then the row
    // goes with the COMMIT, in one round trip while the write's locks are held. When it is not
    // (or the row cannot be written), the statement fails alone and the row is appended after
    // reading the head.
    const guess = guessedAppend(org, config.auditKey, [row]);
    let committed: boolean;
    try {
      committed = await rdb.commitWith(guess.sql, guess.params);
    } catch (err) {
      guess.failed();
      await rdb.rollback();
      audit.record(org, { ...row, outcome: 500 });
      throw err;
    }
    if (committed) return guess.appended();
    guess.failed();
    const inWrite = await rdb
      .transaction((q) => appendAudit(q, org, config.auditKey, [row]))
      .then(() => true)
      .catch((err: Error) => {
        log.warn(
          { event: 'audit.queued_instead', org: org.slug, action: row.action, ...errorFields(err) },
          `the audit row of ${row.action} could not be written with it (${err.message.split('\n')[0]}); queued instead`,
        );
        return false;
      });
    try {
      await rdb.commit();
    } catch (err) {
      await rdb.rollback();
      audit.record(org, { ...row, outcome: 500 });
      throw err;
    }
    if (!inWrite) audit.record(org, row);
  }
}

/** One call as runAudited runs it. */
export interface AuditedUnit<T> {
  /** Whether it may change anything: then it runs in a transaction with its audit row. */
  write: boolean;
  /**
   * A write of engrams, which takes the organization's write lock anyway: it shares its
   * transaction and COMMIT with the engram writes that arrive with it (write-groups.ts). Other
   * writes run alone: one may wait on something outside (a mail server), and a group would wait
   * with it.
   */
  grouped?: boolean;
  /** The work, on the database it is given (for a write, the request's transaction). */
  work(db: Database): Promise<T>;
  /** The status of what the work returned; 400 and above roll a write back. */
  outcome(result: T): number;
  /** The status of an error the work threw. */
  failure(err: unknown): number;
  /** The audit row for an outcome (with the result, when the work returned). */
  row(outcome: number, result?: T): AuditEntry;
}

/** The 429 of a refused decision, naming the policies it violated. */
export function tooMany(d: RateDecision, what: string): HubProblem {
  const violated = d.policies.filter((p) => !p.allowed).map((p) => p.name);
  return new HubProblem(429, 'rate-limited', 'Too many requests', `${what}; retry in ${d.retryAfter} s`, {
    headers: { 'Retry-After': String(d.retryAfter) },
    members: { 'violated-policies': violated },
  });
}
