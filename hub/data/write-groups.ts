import type { Database, OpenTransaction, Org, Preparing } from '../contracts.js';
import { writeLockSql } from './sql.js';
import { queryPrepared } from './prepared-statements.js';

// Group commit of one organization's engram writes in one hub process (the gatekeeper groups
// only those: other writes may wait on something outside, a mail server, and a group would wait
// with them). An engram write holds the organization's write lock to its COMMIT, and the COMMIT
// waits for the WAL to reach the disk: one write at a time, each paying its flush. On this
// project's bench disk a flush is 0.1-0.4 ms; on a network disk it is milliseconds.
//
// So the writes that arrive while one runs take their turns in its transaction: each after the
// one before it has done its part, each in a savepoint of its own (one that fails undoes only
// itself), and one COMMIT for all, after which each is answered. Nothing is acknowledged before
// that COMMIT, so a crash loses only unanswered writes. A write alone is exactly one transaction.
//
// Every group takes the organization's write lock with its first statement: the groups of an
// organization (across processes too) then never hold other locks while they wait for it, so a
// lock one member takes after another member's cannot deadlock with another group.

/** How many writes share one COMMIT at most: the first of them waits for all the others. */
const MAX_MEMBERS = 32;
const SAVEPOINT = 'svc_group_member';

interface Shared {
  tx: OpenTransaction;
  /** Whether the write lock was sent (with the transaction's first statement). */
  locked: boolean;
  /** Members whose part is done, each waiting for the COMMIT. */
  done: Array<{ resolve(): void; reject(err: unknown): void }>;
}

interface Group {
  org: Org;
  /** The open transaction; undefined until a member needs one (and after it was given up). */
  shared: Shared | undefined;
  waiting: Array<{ resolve(member: OpenTransaction): void; reject(err: unknown): void }>;
  /** Turns given, the running one included. */
  taken: number;
  /** It commits (or committed): no one joins it any more. */
  closed: boolean;
}

export class WriteGroups {
  private readonly open = new Map<string, Group>();

  constructor(private readonly db: Database) {}

  /** A write's transaction: its own, or turns in the one of the organization's writes running now. */
  begin(org: Org): Promise<OpenTransaction> {
    const running = this.open.get(org.id);
    if (running && !running.closed && running.taken + running.waiting.length < MAX_MEMBERS) {
      return new Promise((resolve, reject) => running.waiting.push({ resolve, reject }));
    }
    const group: Group = { org, shared: undefined, waiting: [], taken: 1, closed: false };
    this.open.set(org.id, group);
    return this.turn(group).catch((err: unknown) => {
      this.endTurn(group);
      throw err;
    });
  }

  private async turn(group: Group): Promise<OpenTransaction> {
    if (!group.shared) group.shared = { tx: await this.db.begin(), locked: false, done: [] };
    return new Member(this, group, group.shared);
  }

  /** The running member's turn ended: the next one takes its turn, or the transaction ends. */
  endTurn(group: Group): void {
    const next = group.waiting.shift();
    if (next) {
      group.taken++;
      this.turn(group).then(next.resolve, (err: unknown) => {
        next.reject(err);
        this.endTurn(group);
      });
      return;
    }
    this.close(group);
    const shared = group.shared;
    group.shared = undefined;
    if (!shared) return;
    if (shared.done.length === 0) {
      void shared.tx.rollback();
      return;
    }
    shared.tx.commit().then(
      () => shared.done.forEach((d) => d.resolve()),
      (err: unknown) => shared.done.forEach((d) => d.reject(err)),
    );
  }

  /** No one joins it any more: writes from now on start the next group. */
  close(group: Group): void {
    group.closed = true;
    if (this.open.get(group.org.id) === group) this.open.delete(group.org.id);
  }

  /** The transaction cannot go on (a connection lost): the members done with it fail, the next starts anew. */
  giveUp(group: Group, shared: Shared, err: unknown): void {
    if (group.shared === shared) group.shared = undefined;
    shared.done.forEach((d) => d.reject(err));
    shared.done = [];
    void shared.tx.rollback();
  }
}

/** One write's turn in a group's transaction. */
class Member implements OpenTransaction {
  /** turn: its statements run; alone: the transaction is its own (it committed alone), calls go straight to it; ended. */
  private state: 'turn' | 'alone' | 'ended' = 'turn';
  /** Whether any statement of it was sent. */
  private started = false;
  /**
   * The first in its transaction: nothing of anyone else's is in it. Every member sets a savepoint
   * with its first statement and releases it when done, which ends the savepoints it set inside
   * (a write's last is left for COMMIT): no later member can reach one of them by its name.
   */
  private readonly first: boolean;

  constructor(
    private readonly groups: WriteGroups,
    private readonly group: Group,
    private readonly shared: Shared,
  ) {
    this.first = shared.done.length === 0;
  }

  /** What goes before its statement: the write lock with the transaction's first, the savepoint with its own first. */
  private before(script: string | undefined): string | undefined {
    if (this.state === 'ended') {
      // eslint-disable-next-line no-restricted-syntax -- a caller's bug: a statement after the end of its transaction
      throw new Error('this write has ended');
    }
    if (this.state === 'alone' || this.started) return script;
    this.started = true;
    const parts: string[] = [];
    if (!this.shared.locked) {
      this.shared.locked = true;
      parts.push(writeLockSql(this.group.org.schema));
    }
    parts.push(`SAVEPOINT ${SAVEPOINT}`);
    if (script) parts.push(script);
    return parts.join('; ');
  }

  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }> {
    return this.queryAfter<R>('', sql, params);
  }

  async queryAfter<R = Record<string, unknown>>(script: string, sql: string, params?: unknown[]): Promise<{ rows: R[] }> {
    const s = this.before(script || undefined);
    return s ? this.shared.tx.queryAfter<R>(s, sql, params) : this.shared.tx.query<R>(sql, params);
  }

  async exec(sql: string): Promise<void> {
    return this.shared.tx.exec(this.before(sql)!);
  }

  prepared(sql: string): Preparing {
    return this.shared.tx.prepared(sql);
  }

  queryPrepared<R = Record<string, unknown>>(before: string, sql: string, params: unknown[]): Promise<{ rows: R[] }> {
    return queryPrepared<R>(this, before, sql, params);
  }

  commit(): Promise<void> {
    return this.commitAfter('');
  }

  async commitAfter(script: string, ran?: () => void): Promise<void> {
    if (this.state === 'alone') return script ? this.shared.tx.commitAfter(script, ran) : this.shared.tx.commit();
    if (this.state === 'ended') return;
    if (this.first && this.group.waiting.length === 0) {
      // Alone in its transaction with no one waiting: it commits as any transaction does.
      this.state = 'alone';
      this.groups.close(this.group);
      this.group.shared = undefined;
      return this.commitAfter(script, ran);
    }
    if (!this.started && !script) {
      ran?.();
      this.state = 'ended';
      this.groups.endTurn(this.group);
      return;
    }
    // Its last statements, and its savepoint released; when they fail its turn goes on (the
    // caller goes back to a savepoint of its own, or rolls back).
    await this.exec([script, `RELEASE SAVEPOINT ${SAVEPOINT}`].filter(Boolean).join('; '));
    ran?.();
    this.state = 'ended';
    const committed = new Promise<void>((resolve, reject) => this.shared.done.push({ resolve, reject }));
    this.groups.endTurn(this.group);
    return committed;
  }

  async rollback(): Promise<void> {
    if (this.state === 'alone') return this.shared.tx.rollback();
    if (this.state === 'ended') return;
    this.state = 'ended';
    if (this.first) {
      // The transaction's first member: nothing of anyone else is in it yet.
      if (this.group.shared === this.shared) this.group.shared = undefined;
      await this.shared.tx.rollback();
    } else if (this.started) {
      await this.shared.tx.exec(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}; RELEASE SAVEPOINT ${SAVEPOINT}`).catch((err: unknown) => {
        this.groups.giveUp(this.group, this.shared, err);
      });
    }
    this.groups.endTurn(this.group);
  }
}
