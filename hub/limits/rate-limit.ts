import type { Database } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/sql.js';
import { noteRefusal } from './refusals.js';

// Request limits, counted in PostgreSQL so that every hub process on the database shares one
// count. Policies (per minute): "requests" for every call of a token, "writes" for its writes
// (POST, PATCH, PUT, DELETE; recall, inject and pack export are reads), "mcp-messages" for the
// MCP message routes of a token, "ingest" for the writes of one user through any of their tokens
// (the MCP write pipeline's cap), "auth-failures" per client address. Each is a sliding window: the current minute's count plus the previous
// minute's, weighted by the share of the last 60 seconds that still overlaps it, so a burst at
// the end of one minute cannot be followed by a full quota at the start of the next. Refused
// requests count too: a client that keeps sending while limited stays limited. One round trip
// per request, which also reads the organization's authorization epoch.

export interface RateLimits {
  /** Requests per minute per token (default 600). */
  perMinute: number;
  /** Writes per minute per token (default 60). */
  writesPerMinute: number;
  /** Failed authentications per minute per client address (default 30). */
  authFailuresPerMinute: number;
  /** MCP messages (requests to /mcp and /messages) per minute per token (default 300). */
  mcpMessagesPerMinute: number;
  /** Writes per minute per user through MCP, all their tokens together (default 120). */
  ingestPerMinute: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = {
  perMinute: 600,
  writesPerMinute: 60,
  authFailuresPerMinute: 30,
  mcpMessagesPerMinute: 300,
  ingestPerMinute: 120,
};

export const WINDOW_S = 60;

export type PolicyName = 'requests' | 'writes' | 'auth-failures' | 'mcp-messages' | 'ingest';

export interface PolicyState {
  name: PolicyName;
  quota: number;
  /** Requests left now. */
  remaining: number;
  /** Seconds until the current minute ends. */
  reset: number;
  allowed: boolean;
}

export interface RateDecision {
  allowed: boolean;
  policies: PolicyState[];
  /** Seconds until a refused client may try again. */
  retryAfter: number;
  /** The organization's authorization epoch when the token was counted. */
  epoch: number;
}

const QUOTA: Record<PolicyName, keyof RateLimits> = {
  requests: 'perMinute',
  writes: 'writesPerMinute',
  'auth-failures': 'authFailuresPerMinute',
  'mcp-messages': 'mcpMessagesPerMinute',
  ingest: 'ingestPerMinute',
};

export const policyQuota = (limits: RateLimits, name: PolicyName): number => limits[QUOTA[name]];

/** The RateLimit-Policy field (draft-ietf-httpapi-ratelimit-headers): every policy that can apply to the request. */
export function policyField(limits: RateLimits, names: PolicyName[]): string {
  return names.map((n) => `"${n}";q=${policyQuota(limits, n)};w=${WINDOW_S}`).join(', ');
}

/** The RateLimit field: what is left under each policy that applied. */
export function limitField(policies: PolicyState[]): string {
  return policies.map((p) => `"${p.name}";r=${p.remaining};t=${p.reset}`).join(', ');
}

function judge(name: PolicyName, quota: number, hits: number, prev: number, now: number): PolicyState & { retryAfter: number } {
  const start = windowStart(now);
  const elapsed = now / 1000 - start;
  const estimate = prev * (1 - elapsed / WINDOW_S) + hits;
  const allowed = estimate <= quota;
  // When the estimate is back under the quota, if nothing more is sent: still in this minute as
  // the previous one's weight fades, or into the next, where this minute becomes the previous.
  let wait = 0;
  if (!allowed) {
    const inThis = prev > 0 && hits <= quota ? WINDOW_S * (1 - (quota - hits) / prev) - elapsed : Infinity;
    wait = inThis < WINDOW_S - elapsed ? inThis : WINDOW_S - elapsed + WINDOW_S * (1 - quota / hits);
  }
  return {
    name,
    quota,
    remaining: Math.max(0, Math.floor(quota - estimate)),
    reset: Math.max(1, Math.ceil(start + WINDOW_S - now / 1000)),
    allowed,
    retryAfter: Math.max(1, Math.ceil(wait)),
  };
}

/** The start of the one-minute window holding `now` (ms), in seconds. */
export const windowStart = (now: number): number => Math.floor(now / 1000 / WINDOW_S) * WINDOW_S;

/** One policy's count: this minute's hits (this request's included), the previous minute's, and the organization's epoch. */
export interface CountRow {
  bucket: PolicyName;
  hits: number;
  prev: number;
  epoch: number | null;
}

/** Adds `by` (default one each) to the policies' counts of this minute; answers the counts after, the previous minute's and the epoch. */
export async function count(
  db: Database,
  key: string,
  names: PolicyName[],
  orgId: string | null,
  now: number,
  by: number[] = names.map(() => 1),
): Promise<CountRow[]> {
  const r = await db.query<CountRow>(
    `WITH up AS (
       INSERT INTO ${CONTROL_SCHEMA}.rate_limits (token_key, bucket, window_start, hits)
       SELECT $1, b, $2, n FROM unnest($3::text[], $5::int[]) AS x(b, n)
       ON CONFLICT (token_key, bucket, window_start) DO UPDATE SET hits = ${CONTROL_SCHEMA}.rate_limits.hits + excluded.hits
       RETURNING bucket, hits)
     SELECT up.bucket, up.hits, coalesce(p.hits, 0) AS prev,
            (SELECT epoch FROM ${CONTROL_SCHEMA}.org_epochs WHERE org_id = $4) AS epoch
       FROM up LEFT JOIN ${CONTROL_SCHEMA}.rate_limits p
         ON p.token_key = $1 AND p.bucket = up.bucket AND p.window_start = $2 - ${WINDOW_S}`,
    [key, windowStart(now), names, orgId, by],
  );
  return r.rows;
}

export function decide(rows: CountRow[], limits: RateLimits, now: number): RateDecision {
  const judged = rows.map((row) => judge(row.bucket, policyQuota(limits, row.bucket), Number(row.hits), Number(row.prev), now));
  const refused = judged.filter((p) => !p.allowed);
  return {
    allowed: refused.length === 0,
    policies: judged.map(({ retryAfter: _r, ...p }) => p),
    retryAfter: refused.length ? Math.max(...refused.map((p) => p.retryAfter)) : 0,
    epoch: Number(rows[0]?.epoch ?? 0),
  };
}

/**
 * Counts one request of a token (and one write, for writes) in the database; reads the
 * organization's epoch. `counted` sees the counts (the batched counter keeps them).
 */
export async function takeToken(
  db: Database,
  org: { id: string },
  tokenId: string,
  write: boolean,
  limits: RateLimits,
  now = Date.now(),
  extra: PolicyName[] = [],
  counted?: (rows: CountRow[]) => void,
): Promise<RateDecision> {
  const names: PolicyName[] = [...(write ? (['requests', 'writes'] as PolicyName[]) : (['requests'] as PolicyName[])), ...extra];
  const rows = await count(db, `${org.id}:${tokenId}`, names, org.id, now);
  counted?.(rows);
  // Policies in a stable order: requests, then writes.
  rows.sort((a, b) => names.indexOf(a.bucket) - names.indexOf(b.bucket));
  return decide(rows, limits, now);
}

/** Counts one write of a user (all their tokens together) under the MCP ingest cap. */
export async function takeIngest(
  db: Database,
  org: { id: string },
  userId: string,
  limits: RateLimits,
  now = Date.now(),
): Promise<RateDecision> {
  const decision = decide(await count(db, `${org.id}:user:${userId}`, ['ingest'], org.id, now), limits, now);
  if (!decision.allowed) noteRefusal(db, ['ingest']);
  return decision;
}

/** Counts one failed authentication from a client address. */
export async function countAuthFailure(db: Database, address: string, limits: RateLimits, now = Date.now()): Promise<RateDecision> {
  return decide(await count(db, `addr:${address}`, ['auth-failures'], null, now), limits, now);
}

/** Drops finished windows (called now and then; a missed sweep only costs space). */
export async function sweepRateLimits(db: Database, now = Date.now()): Promise<void> {
  const cutoff = Math.floor(now / 1000) - 3 * WINDOW_S;
  await db.query(`DELETE FROM ${CONTROL_SCHEMA}.rate_limits WHERE window_start < $1`, [cutoff]);
}
