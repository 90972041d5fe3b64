import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { EngramEvent, Session } from '../../engine/model/records.js';
import { SvcError } from '../../engine/errors.js';
import { changedFields } from '../../engine/model/change-event.js';
import type { AccessPolicy, Principal, Role } from '../contracts.js';

// Who may read and change what, written once. The backend a request gets is bound to one Policy
// (hub/org-backend/pg-backend.ts) and refuses what it refuses, so REST, MCP (nested tool arguments
// included: the check sits under the tool layer), the pages (REST clients in-process) and
// webhooks (the creator's policy at delivery time) cannot disagree. The rules:
//   - scopes: read the resolved readable set (hub/access/scopes.ts), write the writable set; an
//     admin installing a pack also writes its `pack:<name>` scope;
//   - a viewer changes nothing;
//   - an engram change needs write access to its scope before and after, except a reader's use
//     and verdicts (feedback, activation, usage, recurrence, associations) on any engram it reads;
//     pinning needs the admin role;
//   - episodes and sessions belong to their author and live in a scope the author may write;
//     only a session's owner changes it;
//   - an event is seen only with its subject: an engram's events with the engram, an injection
//     receipt (another person's task text) with its session, or by the person it was for.

export interface Caller {
  userName: string;
  role: Role;
  readable: readonly string[];
  writable: readonly string[];
}

/** Fields a reader's use and verdicts change: allowed on any readable engram. */
const BOOKKEEPING = new Set(['activation', 'feedback_signals', 'usage', 'recurrence_count', 'associations']);

export const forbidden = (message: string): SvcError => new SvcError('forbidden', message);

export class Policy implements AccessPolicy {
  private readonly read: ReadonlySet<string>;
  private readonly write: ReadonlySet<string>;

  constructor(readonly caller: Caller) {
    this.read = new Set(caller.readable);
    this.write = new Set(caller.role === 'viewer' ? [] : caller.writable);
  }

  static of(p: Principal): Policy {
    return new Policy({ userName: p.userName, role: p.role, readable: p.readable, writable: p.writable });
  }

  get userName(): string {
    return this.caller.userName;
  }

  get readable(): readonly string[] {
    return this.caller.readable;
  }

  /** The same caller, reading only `scopes` (of those it may read): injection narrowed to one scope. */
  narrowedTo(scopes: readonly string[]): Policy {
    return new Policy({ ...this.caller, readable: scopes.filter((s) => this.read.has(s)) });
  }

  /** An admin installing or removing pack `name` reads and writes its scope; anyone else is refused. */
  forPack(name: string): Policy {
    this.requireAdmin();
    const scope = `pack:${name}`;
    return new Policy({ ...this.caller, readable: [...this.caller.readable, scope], writable: [...this.caller.writable, scope] });
  }

  mayRead(scope: string | undefined): boolean {
    return scope !== undefined && this.read.has(scope);
  }

  mayWrite(scope: string): boolean {
    return this.write.has(scope);
  }

  requireAdmin(): void {
    if (this.caller.role !== 'admin') throw forbidden(`this needs the admin role; ${this.userName} is ${this.caller.role}`);
  }

  /** Viewers read and change nothing; editors and admins write. */
  requireEditor(): void {
    if (this.caller.role === 'viewer') throw forbidden(`${this.userName} is a viewer: viewers change nothing`);
  }

  requireRead(scope: string): void {
    if (!this.read.has(scope)) throw forbidden(`scope "${scope}" is not among the scopes ${this.userName} may read`);
  }

  requireWrite(scope: string): void {
    this.requireEditor();
    if (this.write.has(scope)) return;
    const writable = [...this.write].join(', ') || 'none';
    throw forbidden(
      this.read.has(scope)
        ? `${this.userName} may read scope "${scope}" but not write it (writable: ${writable})`
        : `scope "${scope}" is not among the scopes ${this.userName} may write (writable: ${writable})`,
    );
  }

  /** An engram write, from `before` (null: a new engram) to `after`. */
  engramWrite(before: EngramDoc | null, after: EngramDoc): void {
    this.requireEditor();
    if (before && changedFields(before, after).every((f) => BOOKKEEPING.has(f))) {
      if (!this.read.has(before.scope)) throw forbidden(`scope "${before.scope}" is not among the scopes ${this.userName} may read`);
      return;
    }
    if ((before?.pinned ?? false) !== (after.pinned ?? false) && this.caller.role !== 'admin')
      throw forbidden('pinning an engram needs the admin role');
    for (const scope of new Set([before?.scope, after.scope].filter((x): x is string => x !== undefined))) this.requireWrite(scope);
  }

  /** A new episode in `scope`. */
  episodeWrite(scope: string): void {
    this.requireWrite(scope);
  }

  /**
   * A session written from `stored` (null: a new one) to `next`. A session the caller may not
   * read is missing to it; one it reads but did not start is refused.
   */
  sessionWrite(stored: Session | null, next: Session): void {
    if (!stored) return this.requireWrite(next.scope ?? `user:${this.userName}`);
    this.requireSessionOwner(stored);
    if (next.scope !== stored.scope && next.scope !== undefined) this.requireWrite(next.scope);
  }

  /** Only the person who started a session ends or changes it. */
  requireSessionOwner(stored: Session): void {
    this.requireEditor();
    if (stored.owner === this.userName) return;
    if (!this.mayRead(stored.scope)) throw new SvcError('not_found', `no session ${stored.id}`);
    throw forbidden(`session ${stored.id} was started by ${stored.owner ?? 'no one'}; only they may end it or change it`);
  }

  /**
   * Whether an event may be shown: an engram's change events with the engram; an injection
   * receipt (it holds the task, another person's prompt) to the person it was for, or with its
   * session. `readableEngram` and `readableSession` answer for the ids the event names.
   */
  eventVisible(
    event: EngramEvent & { owner?: string },
    readableEngram: (id: string) => boolean,
    readableSession: (id: string) => boolean,
  ): boolean {
    if (event.action === 'injected')
      return event.owner === this.userName || (event.session !== undefined && readableSession(event.session));
    return event.engram_id !== undefined && readableEngram(event.engram_id);
  }
}
