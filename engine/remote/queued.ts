import { existsSync, readdirSync } from 'node:fs';
import type { EngramDoc } from '../model/engram-types.js';
import type { RecallHit } from '../ops/recall.js';
import { contentHash } from '../model/content-hash.js';
import { words } from '../search/text-overlap.js';
import { isStopWord } from '../search/stop-words.js';
import { deliver, outboxDir, readOutbox, type Delivery, type OutboxEntry } from './team-outbox.js';
import type { RemoteConfig } from './hub-client.js';

// Team writes waiting in the outbox, as their author sees them: recall, list and inject find
// them (marked `outbox`, "[queued]") until the hub has them, so a write made while the hub was
// down never vanishes from view. And any call the hub answered sends what waits, within the
// caller's budget (a prompt hook's is short), after a cheap look at whether anything waits.

/** Whether any write waits in the outbox (one directory read; no file is parsed). */
export function anythingQueued(storeRoot: string): boolean {
  const dir = outboxDir(storeRoot);
  return existsSync(dir) && readdirSync(dir).some((n) => n.endsWith('.json'));
}

/** The learns waiting for this hub (not the refused ones), oldest first. */
export function queuedLearns(storeRoot: string, remote: RemoteConfig): OutboxEntry[] {
  if (!anythingQueued(storeRoot)) return [];
  return readOutbox(storeRoot).entries.filter(
    (e) => !e.refused && e.url === remote.url && e.path === '/engrams' && typeof e.body.statement === 'string',
  );
}

/** A queued learn shown as an engram: its id says it has none yet (`queued:<key>`). */
export function queuedDoc(e: OutboxEntry): EngramDoc {
  const b = e.body as Record<string, unknown>;
  const statement = String(b.statement);
  return {
    id: `queued:${e.key}`,
    statement,
    type: typeof b.type === 'string' ? b.type : 'behavioral',
    scope: String(b.scope),
    status: 'active',
    tags: Array.isArray(b.tags) ? b.tags.map(String) : [],
    pinned: false,
    content_hash: contentHash(statement),
    temporal: { learned_at: e.queued_at },
    ...(typeof b.domain === 'string' ? { domain: b.domain } : {}),
    ...(typeof b.rationale === 'string' ? { rationale: b.rationale } : {}),
  } as unknown as EngramDoc;
}

// "use" is no stop word for search, but here it would match every queued instruction.
const terms = (text: string): string[] =>
  [...new Set(words(text))].filter((t) => t.length >= 3 && !isStopWord(t) && t !== 'use' && t !== 'uses');
// "log" finds "logging", "service" finds "services": a shared stem of at least three letters.
const sameStem = (a: string, b: string) => a.startsWith(b) || b.startsWith(a);

/**
 * The engrams among `docs` (a handful: the queued learns, or those just delivered) that match
 * `query`, best first: a term match over statement, rationale, domain and tags, no index. The
 * score is the share of the query's terms found, so it sits on recall's 0..1 scale.
 */
export function matchDocs(docs: EngramDoc[], query: string, limit: number, source: 'outbox' | 'hub'): RecallHit[] {
  const want = terms(query);
  if (want.length === 0) return [];
  return docs
    .map((doc) => {
      const have = terms([doc.statement, doc.rationale ?? '', doc.domain ?? '', ...(doc.tags ?? [])].join(' '));
      const found = want.filter((w) => have.some((h) => sameStem(w, h))).length;
      return { doc, score: Math.round((found / want.length) * 10_000) / 10_000 };
    })
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, limit)
    .map((s, i): RecallHit => ({
      engram: s.doc,
      score: s.score,
      found_by: ['bm25'],
      bm25: { rank: i + 1, score: s.score },
      candidate: false,
      source,
    }));
}

/** The queued learns that match `query`, marked `outbox`. */
export const queuedHits = (entries: OutboxEntry[], query: string, limit: number): RecallHit[] =>
  matchDocs(entries.map(queuedDoc), query, limit, 'outbox');

/**
 * Sends what waits for this hub, oldest first, as long as `budgetMs` lasts (each send gets what
 * is left); stops at the first the hub does not take. A send cut short by the budget stays
 * queued: its idempotency key makes the next one safe.
 */
export async function sendWithin(storeRoot: string, remote: RemoteConfig, budgetMs: number): Promise<Delivery[]> {
  const until = Date.now() + budgetMs;
  const done: Delivery[] = [];
  if (!anythingQueued(storeRoot)) return done;
  for (const entry of readOutbox(storeRoot).entries) {
    if (entry.refused || entry.url !== remote.url) continue;
    const left = until - Date.now();
    if (left < 100) break;
    const d = await deliver(storeRoot, remote, entry, left);
    done.push(d);
    if (d.outcome === 'queued') break;
  }
  return done;
}
