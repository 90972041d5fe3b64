import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramDoc } from '../model/engram-types.js';
import type { RecallHit, TeamSource } from '../ops/recall.js';
import { writeCacheFile } from '../store/durable-write.js';
import { normalizeStatement } from '../model/content-hash.js';
import { sha256Hex } from '../text-hash.js';
import { HubClient, RemoteFailure, type RemoteConfig, type RemoteHit } from './hub-client.js';
import type { OutboxEntry } from './team-outbox.js';
import { matchDocs, queuedHits, queuedLearns, sendWithin } from './queued.js';

// The hub as a recall source: its ranking for the query within a deadline, limited to the
// project's remote_scopes when it names some. Hooks run on every prompt, so they may keep an
// answer for a while (`cacheMs`) and reuse it for the same query; commands ask afresh. The
// author's team writes still queued in the outbox are found too (engine/remote/queued.ts), and
// an answer from the hub sends them, within what is left of the deadline.

/** How long commands (recall, inject, session start) wait for the hub. */
export const TEAM_RECALL_BUDGET_MS = 1_500;
/** How long a hook waits; its answer is then kept for the session's next identical prompt. */
export const HOOK_TEAM_BUDGET_MS = 800;
export const HOOK_TEAM_CACHE_MS = 10 * 60_000;

/**
 * `sendMs`: how long queued writes may take to send once the hub answered; by default what is
 * left of `deadlineMs` (a prompt hook never waits past its budget); commands give it a write's 5 s.
 */
export function hubSource(
  storeRoot: string,
  remote: RemoteConfig,
  opts: { deadlineMs?: number; cacheMs?: number; sendMs?: number } = {},
): TeamSource {
  const deadlineMs = opts.deadlineMs ?? TEAM_RECALL_BUDGET_MS;
  return {
    url: remote.url,
    async search(query, limit, onSent) {
      const startedAt = Date.now();
      const file = join(storeRoot, 'remote', 'recall', `${sha256Hex(`${remote.url}\n${limit}\n${query}`).slice(0, 32)}.json`);
      if (opts.cacheMs && existsSync(file)) {
        try {
          const c = JSON.parse(readFileSync(file, 'utf8')) as { at: number; hits: RemoteHit[] };
          if (Date.now() - c.at < opts.cacheMs)
            return { state: 'cached', hits: withQueued(toHits(c.hits, remote), queuedLearns(storeRoot, remote), query, limit) };
        } catch {
          /* asked again */
        }
      }
      try {
        const hits = await new HubClient(remote).recall(query, remote.scopes ? Math.min(200, limit * 3) : limit, deadlineMs, onSent);
        if (opts.cacheMs) writeCacheFile(file, JSON.stringify({ at: Date.now(), hits }));
        // The hub answers: what waits for it goes now, within what is left of the budget.
        const sent = await sendWithin(storeRoot, remote, opts.sendMs ?? deadlineMs - (Date.now() - startedAt));
        // Those just delivered are the hub's now: shown as such when they match.
        const landed = matchDocs(
          sent.flatMap((d) => (d.outcome === 'delivered' && d.answer ? [d.answer as unknown as EngramDoc] : [])),
          query,
          limit,
          'hub',
        );
        return { state: 'ok', hits: withQueued(toHits(hits, remote), queuedLearns(storeRoot, remote), query, limit, landed) };
      } catch (err) {
        // The author's queued writes are found even when the hub is away.
        const queued = withQueued([], queuedLearns(storeRoot, remote), query, limit);
        if (!(err instanceof RemoteFailure)) return { state: 'unreachable', detail: (err as Error).message, hits: queued };
        return { state: err.kind, detail: err.message, hits: queued };
      }
    },
  };
}

/** The hub's hits with the queued learns that match, by score; a queued one the hub already holds is shown once, as the hub's. */
function withQueued(hub: RecallHit[], queued: OutboxEntry[], query: string, limit: number, landed: RecallHit[] = []): RecallHit[] {
  if (queued.length === 0 && landed.length === 0) return hub;
  // Same content: the same statement once normalized (what the content hash hashes).
  const seen = new Set([...hub, ...landed].map((h) => normalizeStatement(h.engram.statement)));
  const fresh = landed.filter((h) => !hub.some((x) => x.engram.id === h.engram.id));
  const waiting = queuedHits(queued, query, limit).filter((h) => !seen.has(normalizeStatement(h.engram.statement)));
  if (fresh.length === 0 && waiting.length === 0) return hub;
  return [...hub, ...fresh, ...waiting].sort((a, b) => b.score - a.score);
}

function toHits(hits: RemoteHit[], remote: RemoteConfig): RecallHit[] {
  return hits
    .filter((h) => !remote.scopes || remote.scopes.includes(h.scope))
    .map((h) => ({
      // What the hub's answer holds of the engram: enough to show it and inject it.
      engram: {
        id: h.id,
        statement: h.statement,
        type: h.type,
        scope: h.scope,
        status: h.status,
        tags: h.tags ?? [],
        pinned: h.pinned,
        ...(h.domain ? { domain: h.domain } : {}),
      } as unknown as EngramDoc,
      score: h.score,
      found_by: h.found_by ?? [],
      ...(h.bm25 ? { bm25: h.bm25 } : {}),
      ...(h.vector ? { vector: h.vector } : {}),
      candidate: h.status === 'candidate',
    }));
}
