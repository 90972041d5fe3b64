import type { Database } from '../contracts.js';
import { CONTROL_SCHEMA } from '../data/migrate.js';
import { decide, policyQuota, takeToken, windowStart, WINDOW_S, type CountRow, type PolicyName, type RateDecision, type RateLimits } from './rate-limit.js';

// A token's requests counted in this process and added to PostgreSQL in one statement for all
// tokens every FLUSH_MS, so a request in the first half of its quotas writes nothing. Past half
// of a quota, or when this process has not read the token's count from the database within the
// last 2 x FLUSH_MS (a token new here, or idle here while others used it), the request is
// counted in the database at once (takeToken), exactly as every process sees it. In the batched
// half a process decides with the database's count as of its last flush plus its own requests
// since; what other processes counted meanwhile shows at their next flush, well before the
// limit. The organization's authorization epoch is still read on every request: a revoked key is
// refused by every process at once.

export const FLUSH_MS = 100;

interface TokenCount {
  window: number;
  /** When the counts in `shared` were read from the database (ms). */
  readAt: number;
  /** Per policy: the database's count as of the last flush (this minute, and the previous minute's). */
  shared: Map<PolicyName, { hits: number; prev: number }>;
  /** Counted here, not yet in the database. */
  pending: Map<PolicyName, number>;
  /** Being added to the database by the flush in flight. */
  inflight: Map<PolicyName, number>;
}

export class BatchedCounter {
  private readonly tokens = new Map<string, TokenCount>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly flushMs = FLUSH_MS,
  ) {}

  /** takeToken's decision, from memory when the token is counted here already and far from its limits. */
  async take(org: { id: string }, tokenId: string, write: boolean, limits: RateLimits, extra: PolicyName[] = []): Promise<RateDecision> {
    const now = Date.now();
    const names: PolicyName[] = [...(write ? (['requests', 'writes'] as PolicyName[]) : (['requests'] as PolicyName[])), ...extra];
    const key = `${org.id}:${tokenId}`;
    const t = this.tokens.get(key);
    const fresh = t && t.window === windowStart(now) && now - t.readAt <= 2 * this.flushMs;
    const rows = fresh ? this.estimate(t, names, limits, now) : null;
    if (!rows) return this.exact(org, tokenId, key, names, write, limits, now, extra);
    for (const n of names) t!.pending.set(n, (t!.pending.get(n) ?? 0) + 1);
    this.schedule();
    const epoch = await this.db.query<{ epoch: number }>(`SELECT epoch FROM ${CONTROL_SCHEMA}.org_epochs WHERE org_id = $1`, [org.id]);
    return decide(rows.map((r) => ({ ...r, epoch: epoch.rows[0]?.epoch ?? 0 })), limits, now);
  }

  /** Counts with this request in, or null when a policy is unknown here or past half its quota. */
  private estimate(t: TokenCount, names: PolicyName[], limits: RateLimits, now: number): CountRow[] | null {
    const elapsed = now / 1000 - t.window;
    const rows: CountRow[] = [];
    for (const n of names) {
      const shared = t.shared.get(n);
      if (!shared) return null;
      const hits = shared.hits + (t.inflight.get(n) ?? 0) + (t.pending.get(n) ?? 0) + 1;
      const quota = policyQuota(limits, n);
      if (shared.prev * (1 - elapsed / WINDOW_S) + hits > quota / 2) return null;
      rows.push({ bucket: n, hits, prev: shared.prev, epoch: 0 });
    }
    return rows;
  }

  private async exact(org: { id: string }, tokenId: string, key: string, names: PolicyName[], write: boolean, limits: RateLimits, now: number, extra: PolicyName[]): Promise<RateDecision> {
    // What this process counted and has not added yet goes in first.
    await this.flush();
    const decision = await takeToken(this.db, org, tokenId, write, limits, now, extra, (rows) => {
      let t = this.tokens.get(key);
      if (!t || t.window !== windowStart(now)) this.tokens.set(key, (t = { window: windowStart(now), readAt: 0, shared: new Map(), pending: new Map(), inflight: new Map() }));
      t.readAt = now;
      for (const r of rows) t.shared.set(r.bucket, { hits: Number(r.hits), prev: Number(r.prev) });
    });
    return decision;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch(() => undefined);
    }, this.flushMs);
    this.timer.unref();
  }

  /** Adds every pending count to the database in one statement and reads the totals back. */
  flush(): Promise<void> {
    const run = this.flushing.then(async () => {
      const batch: Array<{ key: string; t: TokenCount; bucket: PolicyName; n: number }> = [];
      for (const [key, t] of this.tokens) {
        for (const [bucket, n] of t.pending) if (n > 0) batch.push({ key, t, bucket, n });
        for (const [bucket, n] of t.pending) t.inflight.set(bucket, (t.inflight.get(bucket) ?? 0) + n);
        t.pending.clear();
      }
      if (batch.length === 0) return;
      const readAt = Date.now();
      try {
        const r = await this.db.query<{ token_key: string; bucket: PolicyName; window_start: number; hits: number; prev: number }>(
          `WITH up AS (
             INSERT INTO ${CONTROL_SCHEMA}.rate_limits (token_key, bucket, window_start, hits)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[])
             ON CONFLICT (token_key, bucket, window_start) DO UPDATE SET hits = ${CONTROL_SCHEMA}.rate_limits.hits + excluded.hits
             RETURNING token_key, bucket, window_start, hits)
           SELECT up.token_key, up.bucket, up.window_start, up.hits, coalesce(p.hits, 0) AS prev
             FROM up LEFT JOIN ${CONTROL_SCHEMA}.rate_limits p
               ON p.token_key = up.token_key AND p.bucket = up.bucket AND p.window_start = up.window_start - ${WINDOW_S}`,
          [batch.map((b) => b.key), batch.map((b) => b.bucket), batch.map((b) => b.t.window), batch.map((b) => b.n)],
        );
        for (const row of r.rows) {
          const t = this.tokens.get(row.token_key);
          if (t && t.window === Number(row.window_start)) {
            t.shared.set(row.bucket, { hits: Number(row.hits), prev: Number(row.prev) });
            t.readAt = readAt;
          }
        }
      } catch (err) {
        // Counted again with the next flush.
        for (const b of batch) b.t.pending.set(b.bucket, (b.t.pending.get(b.bucket) ?? 0) + b.n);
        throw err;
      } finally {
        for (const b of batch) b.t.inflight.set(b.bucket, (b.t.inflight.get(b.bucket) ?? 0) - b.n);
        // Tokens of finished minutes go once nothing of theirs waits.
        const current = windowStart(Date.now());
        for (const [key, t] of this.tokens) if (t.window !== current && t.pending.size === 0) this.tokens.delete(key);
      }
    });
    this.flushing = run.catch(() => undefined);
    return run;
  }
}
