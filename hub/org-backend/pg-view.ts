import type { EngramDoc } from '../../engine/model/engram-types.js';
import type { AccessPolicy, Database, Org, Queryable } from '../contracts.js';

// What one caller sees of an organization's schema: the handle PgBackend passes to its search,
// write and record modules, and the scoping every query applies (a hidden engram looks exactly
// like a missing one).

export interface OrgView {
  readonly db: Database;
  readonly org: Org;
  /** The organization's schema, quoted for SQL. */
  readonly s: string;
  /** Scopes the caller may read; null: all. */
  readonly readable: readonly string[] | null;
  readonly policy: AccessPolicy | null;
  /** The caller: the owner of the episodes and sessions it writes. */
  readonly owner: string | null;
}

/** Of these engram ids, the ones the caller may read (the order kept). */
export async function readableIds(view: OrgView, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0 || !view.readable) return [...ids];
  const params: unknown[] = [[...ids]];
  const where = scopeClause(view, 'scope', params);
  const seen = new Set(
    (await view.db.query<{ id: string }>(`SELECT id FROM ${view.s}.engrams WHERE id = ANY($1::text[])${where}`, params)).rows.map(
      (r) => r.id,
    ),
  );
  return ids.filter((id) => seen.has(id));
}

/** `AND <col> = ANY($n)` when reads are restricted, with its parameter appended to `params`. */
export function scopeClause(view: OrgView, col: string, params: unknown[]): string {
  if (!view.readable) return '';
  params.push([...view.readable]);
  return ` AND ${col} = ANY($${params.length}::text[])`;
}

export function visible(view: OrgView, e: EngramDoc | null): EngramDoc | null {
  return e && (!view.policy || view.policy.mayRead(e.scope)) ? e : null;
}

/** Where a record without a scope lives: its owner's own scope (the organization's, written by no one). */
export function recordScope(view: OrgView, scope: string | undefined): string {
  return scope ?? (view.owner ? `user:${view.owner}` : `org:${view.org.slug}`);
}

export async function getDoc(q: Queryable, s: string, id: string): Promise<EngramDoc | null> {
  return (await q.query<{ doc: EngramDoc }>(`SELECT doc FROM ${s}.engrams WHERE id = $1`, [id])).rows[0]?.doc ?? null;
}
