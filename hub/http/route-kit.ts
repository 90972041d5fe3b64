import type { ParameterizedContext } from 'koa';
import type { RouterContext } from '@koa/router';
import type { HubState, Principal } from '../contracts.js';
import type { OpContext } from '../../engine/ops/context.js';
import { badRequest } from './problem.js';
import { Policy } from '../access/policy.js';

// What the route modules share: permission checks, paging parameters, the engine context.

export type Ctx = RouterContext<HubState> & ParameterizedContext<HubState>;

// The checks below are the policy's (hub/access/policy.ts), for routes that hold a principal.

export function requireAdmin(p: Principal): void {
  Policy.of(p).requireAdmin();
}

/** Viewers read and change nothing; editors and admins write. */
export function requireEditor(p: Principal): void {
  Policy.of(p).requireEditor();
}

export function requireWritable(p: Principal, scope: string): void {
  Policy.of(p).requireWrite(scope);
}

export function requireReadable(p: Principal, scope: string): void {
  Policy.of(p).requireRead(scope);
}

export const opContext = (): OpContext => ({ now: () => new Date(), sessionId: null });

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[v.length - 1] : v);

/** A query parameter's last value; absent or empty: undefined. (The pages use it too.) */
export function queryText(ctx: Pick<ParameterizedContext, 'query'>, name: string): string | undefined {
  const v = one(ctx.query[name] as string | string[] | undefined);
  return v === undefined || v === '' ? undefined : v;
}

export function pageLimit(ctx: Ctx, fallback = 50, max = 200): number {
  const raw = queryText(ctx, 'limit');
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw badRequest(`limit must be a whole number from 1 to ${max} (got "${raw}")`, [`limit: must be 1..${max}`]);
  return n;
}

/** Cursors are opaque to clients: base64url of the last item's sort key. */
export const encodeCursor = (key: string | number): string => Buffer.from(String(key)).toString('base64url');

export function decodeCursor(ctx: Ctx): string | undefined {
  const raw = queryText(ctx, 'cursor');
  if (raw === undefined) return undefined;
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  // Every key this API pages by (names, ids, paths, sequence numbers) is printable ASCII.
  if (!/^[\x21-\x7e]+$/.test(text))
    throw badRequest('cursor is not one this API gave out; pass next_cursor back unchanged', ['cursor: invalid']);
  return text;
}

/** A cursor over a sequence number (engrams, audit rows): a whole number PostgreSQL's bigint holds. */
export function decodeSeqCursor(ctx: Ctx): number | undefined {
  const text = decodeCursor(ctx);
  if (text === undefined) return undefined;
  if (!/^\d{1,15}$/.test(text))
    throw badRequest('cursor is not one this API gave out; pass next_cursor back unchanged', ['cursor: invalid']);
  return Number(text);
}

export function isoQuery(ctx: Ctx, name: string): string | undefined {
  const v = queryText(ctx, name);
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  const year = new Date(t).getUTCFullYear();
  // Years 1 to 9999: what ISO 8601 writes without an extension, and PostgreSQL reads back.
  if (Number.isNaN(t) || year < 1 || year > 9999)
    throw badRequest(`${name} must be an ISO 8601 date or timestamp between the years 1 and 9999 (got "${v}")`, [`${name}: not a date`]);
  return new Date(t).toISOString();
}
