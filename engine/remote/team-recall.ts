import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EngramDoc } from '../model/engram-schema.js';
import type { RecallHit, TeamSource } from '../ops/recall.js';
import { writeFileDurable } from '../store/durable-write.js';
import { HubClient, RemoteFailure, type RemoteConfig, type RemoteHit } from './hub-client.js';

// The hub as a recall source: its ranking for the query within a deadline, limited to the
// project's remote_scopes when it names some. Hooks run on every prompt, so they may keep an
// answer for a while (`cacheMs`) and reuse it for the same query; commands ask afresh.

/** How long commands (recall, inject, session start) wait for the hub. */
export const TEAM_RECALL_BUDGET_MS = 1_500;
/** How long a hook waits; its answer is then kept for the session's next identical prompt. */
export const HOOK_TEAM_BUDGET_MS = 800;
export const HOOK_TEAM_CACHE_MS = 10 * 60_000;

export function hubSource(storeRoot: string, remote: RemoteConfig, opts: { deadlineMs?: number; cacheMs?: number } = {}): TeamSource {
  const deadlineMs = opts.deadlineMs ?? TEAM_RECALL_BUDGET_MS;
  return {
    url: remote.url,
    async search(query, limit) {
      const file = join(storeRoot, 'remote', 'recall', `${createHash('sha256').update(`${remote.url}\n${limit}\n${query}`).digest('hex').slice(0, 32)}.json`);
      if (opts.cacheMs && existsSync(file)) {
        try {
          const c = JSON.parse(readFileSync(file, 'utf8')) as { at: number; hits: RemoteHit[] };
          if (Date.now() - c.at < opts.cacheMs) return { state: 'cached', hits: toHits(c.hits, remote) };
        } catch {
          /* asked again */
        }
      }
      try {
        const hits = await new HubClient(remote).recall(query, remote.scopes ? Math.min(200, limit * 3) : limit, deadlineMs);
        if (opts.cacheMs) writeFileDurable(file, JSON.stringify({ at: Date.now(), hits }), { mkdir: true });
        return { state: 'ok', hits: toHits(hits, remote) };
      } catch (err) {
        if (!(err instanceof RemoteFailure)) return { state: 'unreachable', detail: (err as Error).message, hits: [] };
        return { state: err.kind, detail: err.message, hits: [] };
      }
    },
  };
}

function toHits(hits: RemoteHit[], remote: RemoteConfig): RecallHit[] {
  return hits
    .filter((h) => !remote.scopes || remote.scopes.includes(h.scope))
    .map((h) => ({
      // What the hub's answer holds of the engram: enough to show it and inject it.
      engram: { id: h.id, statement: h.statement, type: h.type, scope: h.scope, status: h.status, tags: h.tags ?? [], pinned: h.pinned, ...(h.domain ? { domain: h.domain } : {}) } as unknown as EngramDoc,
      score: h.score,
      found_by: h.found_by ?? [],
      ...(h.bm25 ? { bm25: h.bm25 } : {}),
      ...(h.vector ? { vector: h.vector } : {}),
      candidate: h.status === 'candidate',
    }));
}
