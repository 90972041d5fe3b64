import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { HubState, Principal } from '../../contracts.js';
import type { OpContext } from '../../../engine/ops/context.js';
import { badRequest, forbidden } from '../problem.js';

// What the route modules share: permission checks, paging parameters, the engine context.

export type Ctx = RouterContext<HubState> & ParameterizedContext<HubState>;

export function requireAdmin(p: Principal): void {
  if (p.role !== 'admin') throw forbidden(`this route needs the admin role; ${p.userName} is ${p.role}`);
}

export function requireWritable(p: Principal, scope: string): void {
  if (!p.writable.includes(scope)) {
    throw forbidden(
      p.readable.includes(scope)
        ? `${p.userName} may read scope "${scope}" but not write it (writable: ${p.writable.join(', ') || 'none'})`
        : `scope "${scope}" is not among the scopes ${p.userName} may write (writable: ${p.writable.join(', ') || 'none'})`,
    );
  }
}

export function requireReadable(p: Principal, scope: string): void {
  if (!p.readable.includes(scope)) throw forbidden(`scope "${scope}" is not among the scopes ${p.userName} may read`);
}

export const opContext = (): OpContext => ({ now: () => new Date(), sessionId: null });

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[v.length - 1] : v);

export function queryText(ctx: Ctx, name: string): string | undefined {
  const v = one(ctx.query[name] as string | string[] | undefined);
  return v === undefined || v === '' ? undefined : v;
}

export function pageLimit(ctx: Ctx, fallback = 50, max = 200): number {
  const raw = queryText(ctx, 'limit');
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw badRequest(`limit must be a whole number from 1 to ${max} (got "${raw}")`, [`limit: must be 1..${max}`]);
  return n;
}

/** Cursors are opaque to clients: base64url of the last item's sort key. */
export const encodeCursor = (key: string | number): string => Buffer.from(String(key)).toString('base64url');

export function decodeCursor(ctx: Ctx): string | undefined {
  const raw = queryText(ctx, 'cursor');
  if (raw === undefined) return undefined;
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  if (!text) throw badRequest('cursor is not one this API gave out; pass next_cursor back unchanged', ['cursor: invalid']);
  return text;
}

export function isoQuery(ctx: Ctx, name: string): string | undefined {
  const v = queryText(ctx, name);
  if (v !== undefined && Number.isNaN(Date.parse(v))) throw badRequest(`${name} must be an ISO 8601 date or timestamp (got "${v}")`, [`${name}: not a date`]);
  return v === undefined ? undefined : new Date(v).toISOString();
}
