import ipaddr from 'ipaddr.js';
import type { Database } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/sql.js';
import { HubProblem } from '../http/problem.js';
import { WINDOW_S, windowStart } from './rate-limit.js';
import { noteRefusal } from './refusals.js';

// Anonymous sign-in starts, limited per client address: each one stores an attempt (and for SAML
// an AuthnRequest ID) until it expires, so a client must not be able to start them without end.
// Counted in the shared rate_limits table (every hub process sees one count), in the same sliding
// minute as the other limits. An IPv6 client is counted by its /64, which one host usually has whole.

export const SIGN_IN_STARTS_PER_MINUTE = 60;
const BUCKET = 'sign-in-starts';

/** The part of a client address that names one client: IPv4 whole, IPv6 by its /64. */
export function clientKey(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  let ip = ipaddr.parse(address);
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  return ip.kind() === 'ipv4'
    ? ip.toString()
    : `${(ip as ipaddr.IPv6).parts
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(':')}::/64`;
}

/** Counts one sign-in start from `address`; a 429 with Retry-After once over the limit. */
export async function takeSignInStart(
  db: Database,
  address: string,
  perMinute = SIGN_IN_STARTS_PER_MINUTE,
  now = Date.now(),
): Promise<void> {
  const start = windowStart(now);
  const r = await db.query<{ hits: number; prev: number }>(
    `WITH up AS (
       INSERT INTO ${CONTROL_SCHEMA}.rate_limits (token_key, bucket, window_start, hits) VALUES ($1, $2, $3, 1)
       ON CONFLICT (token_key, bucket, window_start) DO UPDATE SET hits = ${CONTROL_SCHEMA}.rate_limits.hits + 1
       RETURNING hits)
     SELECT up.hits, coalesce((SELECT hits FROM ${CONTROL_SCHEMA}.rate_limits WHERE token_key = $1 AND bucket = $2 AND window_start = $3 - ${WINDOW_S}), 0) AS prev FROM up`,
    [`addr:${clientKey(address)}`, BUCKET, start],
  );
  const { hits, prev } = r.rows[0]!;
  const elapsed = now / 1000 - start;
  const estimate = Number(prev) * (1 - elapsed / WINDOW_S) + Number(hits);
  if (estimate <= perMinute) return;
  // At the latest when this minute ends the previous one's weight is gone; this one's stays, so
  // a client that kept sending waits a little longer in proportion.
  noteRefusal(db, [BUCKET]);
  const retryAfter = Math.max(
    1,
    Math.ceil(start + WINDOW_S - now / 1000 + (Number(hits) > perMinute ? WINDOW_S * (1 - perMinute / Number(hits)) : 0)),
  );
  throw new HubProblem(
    429,
    'rate-limited',
    'Too many requests',
    `too many sign-ins started from this address (${perMinute} a minute); retry in ${retryAfter} s`,
    {
      headers: { 'Retry-After': String(retryAfter) },
      members: { 'violated-policies': [BUCKET] },
    },
  );
}
