import type { EmbedderProvider, EngramBackend } from '../engine/backend.js';
import type { EngramDoc } from '../engine/model/engram-types.js';
import type { EngramEvent, Session } from '../engine/model/records.js';
import type { RerankSetting } from '../engine/rerank/reranker.js';

// The shapes the hub's parts agree on: the database handle (PostgreSQL through `pg`, or PGlite),
// an organization, the caller a request runs as, and the per-request Koa state.

/** Something that runs SQL with $1-style parameters: the database, or one transaction. */
export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  /** Runs a script of several statements, no parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Where present (a write request's transaction): takes a statement whose answer nobody waits
   * for and sends it in the transaction's next round trip, often its COMMIT's. If it then fails,
   * the whole transaction fails. Where absent, run it as a query.
   */
  defer?(sql: string, params: unknown[]): Promise<void>;
}

/** One transaction, as a unit of work run in it sees it. */
export interface Transaction extends Queryable {
  /**
   * Runs `before` (statements without parameters, such as taking a lock) and then `sql` as a
   * statement prepared on the connection (data/prepared-statements.ts), in one round trip; answers
   * sql's rows. A statement whose plan is worth keeping, read under a lock: it is planned once
   * per connection, not on every call.
   */
  queryPrepared<R = Record<string, unknown>>(before: string, sql: string, params: unknown[]): Promise<{ rows: R[] }>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** pgvector is installed in this database (PGlite always; a server only when the extension exists). */
  readonly hasVector: boolean;
  /** Runs fn in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (q: Transaction) => Promise<T>): Promise<T>;
  /** A transaction the caller ends: for work that spans a whole request. */
  begin(): Promise<OpenTransaction>;
  /**
   * Calls `onPayload` for each NOTIFY on `channel` (any process on the database); resolves to what
   * stops it. A lost connection (a database restart) is made again with backoff, and `onResume`
   * called once it listens again: what was notified meanwhile is gone, read it from the tables.
   */
  listen(channel: string, onPayload: (payload: string) => void, onResume?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface OpenTransaction extends Transaction {
  /**
   * Runs `script` (statements without parameters, such as a savepoint's) and then `sql`; answers
   * sql's rows. One round trip when every parameter has a plain literal (sql.ts `inlineParams`).
   */
  queryAfter<R = Record<string, unknown>>(script: string, sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  /**
   * Runs `script` (statements without parameters) and commits, in one round trip. When a
   * statement of the script fails, the COMMIT does not run and the transaction stays open (the
   * caller rolls back, or back to a savepoint); when the COMMIT fails, it has ended. `ran` is
   * called once the script has run, before the COMMIT's outcome is known where that comes later
   * (a write that shares its COMMIT: write-groups.ts).
   */
  commitAfter(script: string, ran?: () => void): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** `sql` as a statement prepared on this transaction's connection (data/prepared-statements.ts). */
  prepared(sql: string): Preparing;
}

/** A statement as prepared on one connection. */
export interface Preparing {
  name: string;
  /** The statements that prepare it on this connection (when it is not prepared there yet): run them, then call done(). */
  script?: string;
  done(): void;
}

export interface Org {
  id: string;
  slug: string;
  /** The PostgreSQL schema holding the organization's data, e.g. `org_acme`. Always a safe identifier. */
  schema: string;
  /** Engram ids it mints: ENG-{idPrefix}-YYYY-MMDD-NNN. */
  idPrefix: string;
}

export type Role = 'viewer' | 'editor' | 'admin';

/** Who a request runs as, resolved from its bearer token. */
export interface Principal {
  org: Org;
  userId: string;
  userName: string;
  role: Role;
  /** The API key's id, or the JWT's `jti`: rate limits and audit rows are per token. */
  tokenId: string;
  via: 'api_key' | 'jwt';
  /** The resource an OAuth access token was issued for (RFC 8707): it is good there only (hub/http/auth.ts). */
  audience?: string;
  /** The OAuth grant (login_sessions id) the token was issued from. */
  grant?: string;
  /** A JWT's expiry (seconds since the epoch): a cached principal is dropped once it passes. */
  expiresAt?: number;
  /** The organization's authorization epoch this principal was resolved at. */
  epoch: number;
  /** Scopes the caller may read, resolved on the server (user, groups and parents, org, global). */
  readable: string[];
  /** The writable subset of `readable`. */
  writable: string[];
}

/**
 * What a caller may read and change, as the routes and the backend bound to it ask it; the rules
 * are the Policy class's (hub/access/policy.ts). The require* and *Write checks throw a forbidden
 * SvcError when refused.
 */
export interface AccessPolicy {
  readonly userName: string;
  readonly readable: readonly string[];
  /** The same caller, reading only `scopes` (of those it may read). */
  narrowedTo(scopes: readonly string[]): AccessPolicy;
  /** An admin installing or removing pack `name` reads and writes its scope; anyone else is refused. */
  forPack(name: string): AccessPolicy;
  mayRead(scope: string | undefined): boolean;
  mayWrite(scope: string): boolean;
  requireAdmin(): void;
  requireEditor(): void;
  requireRead(scope: string): void;
  requireWrite(scope: string): void;
  /** An engram write, from `before` (null: a new engram) to `after`. */
  engramWrite(before: EngramDoc | null, after: EngramDoc): void;
  episodeWrite(scope: string): void;
  /** A session written from `stored` (null: a new one) to `next`. */
  sessionWrite(stored: Session | null, next: Session): void;
  requireSessionOwner(stored: Session): void;
  /** Whether an event may be shown; the callbacks answer for the ids it names. */
  eventVisible(
    event: EngramEvent & { owner?: string },
    readableEngram: (id: string) => boolean,
    readableSession: (id: string) => boolean,
  ): boolean;
}

/** Filters of the REST engram list. */
export interface EngramPageFilter {
  scope?: string;
  status?: string;
  type?: string;
  domain?: string;
  content_hash?: string;
}

/** The engine backend of one organization, with what the hub adds to the engine's contract. */
export interface OrgBackend extends EngramBackend {
  readonly org: Org;
  /** A page of engrams, newest first, after the cursor (a `seq`); `next` continues it, null at the end. */
  page(filter: EngramPageFilter, after: number | undefined, limit: number): Promise<{ items: EngramDoc[]; next: number | null }>;
  /** The sessions `owner` started, newest first. */
  sessionsOf(owner: string, limit: number): Promise<Session[]>;
  /** Of these engram ids, the ones the caller may read. */
  readableIds(ids: readonly string[]): Promise<string[]>;
}

/** Koa `ctx.state` on authenticated routes. */
export interface HubState {
  principal: Principal;
  /** What the principal may read and change (hub/access/policy.ts); the backend is bound to it. */
  policy: AccessPolicy;
  /** The database as this request sees it: for a write, one transaction with its audit row. */
  db: Database;
  /** The engine backend of the caller's organization, restricted to its readable scopes. */
  backend: OrgBackend;
  /** The hub's dense leg (fastembed in the data folder's models/); BM25 only when it cannot load. */
  embedder: EmbedderProvider;
  /** Set when the deployment enables a reranker. */
  reranker?: RerankSetting;
  /** What the audit row of this request names: `engram:ENG-...`, `session:SES-...`, `api_key:...`. */
  auditResource?: string;
  /** Extra facts for the audit row (never secrets). */
  auditDetails?: Record<string, unknown>;
}
