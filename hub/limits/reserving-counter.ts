import type { Database } from '../contracts.js';
import { currentEpoch } from '../access/epoch.js';
import {
  count,
  decide,
  policyQuota,
  windowStart,
  WINDOW_S,
  type CountRow,
  type PolicyName,
  type RateDecision,
  type RateLimits,
} from './rate-limit.js';
import { noteRefusal } from './refusals.js';

// A token's requests counted in blocks reserved in PostgreSQL before they are used: a process
// adds a block (a twentieth of the quota while the count is under half of it, else one) to the
// database's count, judged there as a whole, and admits the block's requests from memory. Every
// admitted request is in the database's count before it is admitted, so any number of hub
// processes together admit no more than the quota (a burst included); what a block leaves unused
// at the end of the minute counts all the same, as refused requests do. A busy token costs one
// write per block instead of one per request. The organization's authorization epoch is still
// read for every request (fresh-read.ts: requests that come together share one read): a revoked
// key is refused by every process at once.

interface Held {
  window: number;
  /** Per policy: requests this process reserved in the database and has not used yet. */
  left: Map<PolicyName, number>;
  /** Per policy: the database's count (this minute, the previous one) as of the last reservation. */
  seen: Map<PolicyName, { hits: number; prev: number }>;
  /** The reservation in flight: requests that need one wait for it rather than reserve a block each. */
  reserving?: Promise<unknown>;
}

/** The block a policy reserves: a twentieth of the quota while the count stays under half of it, else one. */
function blockSize(seen: { hits: number; prev: number } | undefined, quota: number, now: number): number {
  const chunk = Math.max(1, Math.floor(quota / 20));
  if (!seen || chunk === 1) return 1;
  const elapsed = now / 1000 - windowStart(now);
  return seen.prev * (1 - elapsed / WINDOW_S) + seen.hits + chunk <= quota / 2 ? chunk : 1;
}

export class ReservingCounter {
  private readonly held = new Map<string, Held>();

  constructor(private readonly db: Database) {}

  /** Counts one request of a token under its policies (requests, writes for a write, and `extra` ones). */
  async take(org: { id: string }, tokenId: string, write: boolean, limits: RateLimits, extra: PolicyName[] = []): Promise<RateDecision> {
    const now = Date.now();
    const names: PolicyName[] = [...(write ? (['requests', 'writes'] as PolicyName[]) : (['requests'] as PolicyName[])), ...extra];
    const key = `${org.id}:${tokenId}`;
    let h = this.held.get(key);
    if (!h || h.window !== windowStart(now)) {
      if (this.held.size > 50_000) this.sweep(now);
      this.held.set(key, (h = { window: windowStart(now), left: new Map(), seen: new Map() }));
    }
    // Policies with a reserved request left use it; the others reserve a block now (one
    // reservation at a time per token in this process: the others wait and use its block).
    let short = names.filter((n) => (h!.left.get(n) ?? 0) < 1);
    while (short.length > 0 && h.reserving) {
      await h.reserving.catch(() => undefined);
      short = names.filter((n) => (h!.left.get(n) ?? 0) < 1);
    }
    for (const n of names) if (!short.includes(n)) h.left.set(n, h.left.get(n)! - 1);
    let rows: CountRow[] = [];
    if (short.length > 0) {
      const blocks = short.map((n) => blockSize(h!.seen.get(n), policyQuota(limits, n), now));
      const reservation = count(this.db, key, short, org.id, now, blocks);
      h.reserving = reservation;
      try {
        rows = await reservation;
      } finally {
        if (h.reserving === reservation) h.reserving = undefined;
      }
      for (const r of rows) {
        const block = blocks[short.indexOf(r.bucket)]!;
        h.seen.set(r.bucket, { hits: Number(r.hits), prev: Number(r.prev) });
        const allowed = decide([r], limits, now).allowed;
        h.left.set(r.bucket, allowed ? block - 1 : 0);
      }
    }
    const epoch = rows[0]?.epoch ?? (await currentEpoch(this.db, org));
    const all = names.map((n) => rows.find((r) => r.bucket === n) ?? { bucket: n, ...h!.seen.get(n)!, epoch });
    const decision = decide(
      all.map((r) => ({ ...r, epoch })),
      limits,
      now,
    );
    if (!decision.allowed)
      noteRefusal(
        this.db,
        decision.policies.filter((p) => !p.allowed).map((p) => p.name),
      );
    return decision;
  }

  private sweep(now: number): void {
    const current = windowStart(now);
    for (const [key, h] of this.held) if (h.window !== current) this.held.delete(key);
  }
}
