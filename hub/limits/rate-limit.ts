import type { Database } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/migrate.js';

// Per-token request limits in fixed one-minute windows, counted in PostgreSQL so every hub
// process on the database shares one count. Every request counts against `all`; POST and PATCH
// also against `write`. One round trip per request.

export interface RateLimits {
  /** Requests per minute per token (default 600). */
  perMinute: number;
  /** POST and PATCH requests per minute per token (default 60). */
  writesPerMinute: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = { perMinute: 600, writesPerMinute: 60 };

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  reset: number;
}

const WINDOW_S = 60;

export async function takeToken(db: Database, tokenKey: string, write: boolean, limits: RateLimits, now = Date.now()): Promise<RateDecision> {
  const windowStart = Math.floor(now / 1000 / WINDOW_S) * WINDOW_S;
  const buckets = write ? ['all', 'write'] : ['all'];
  const r = await db.query<{ bucket: string; hits: number }>(
    `INSERT INTO ${CONTROL_SCHEMA}.rate_limits (token_key, bucket, window_start, hits)
     SELECT $1, b, $2, 1 FROM unnest($3::text[]) AS b
     ON CONFLICT (token_key, bucket, window_start) DO UPDATE SET hits = ${CONTROL_SCHEMA}.rate_limits.hits + 1
     RETURNING bucket, hits`,
    [tokenKey, windowStart, buckets],
  );
  const reset = windowStart + WINDOW_S - Math.floor(now / 1000);
  // The tightest bucket decides and is what the headers report.
  let decision: RateDecision = { allowed: true, limit: limits.perMinute, remaining: limits.perMinute, reset };
  for (const row of r.rows) {
    const limit = row.bucket === 'write' ? limits.writesPerMinute : limits.perMinute;
    const remaining = Math.max(0, limit - Number(row.hits));
    const allowed = Number(row.hits) <= limit;
    if (!allowed || remaining < decision.remaining) decision = { allowed: allowed && decision.allowed, limit, remaining, reset };
  }
  return decision;
}

/** Drops finished windows (called now and then; a missed sweep only costs space). */
export async function sweepRateLimits(db: Database, now = Date.now()): Promise<void> {
  const cutoff = Math.floor(now / 1000) - 2 * WINDOW_S;
  await db.query(`DELETE FROM ${CONTROL_SCHEMA}.rate_limits WHERE window_start < $1`, [cutoff]);
}
