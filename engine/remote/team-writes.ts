import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scopeKind } from '../model/scope.js';
import type { Publisher } from '../ops/rescope.js';
import { writeCacheFile } from '../store/durable-write.js';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';
import { sendWithin } from './queued.js';
import {
  deliver,
  dropEntry,
  enqueue,
  flushOutbox,
  outboxDir,
  readOutbox,
  REMOTE_WRITE_TIMEOUT_MS,
  type Delivery,
  type OutboxEntry,
} from './team-outbox.js';

// Which writes go to the hub, and how. When the project names a hub, group: and org: scopes are
// the team's and go there (the hub refuses, clearly, one the user may not write); another scope
// goes there when the hub says the user may write it (its answer to GET /me, kept 10 minutes). A
// user's own scopes (user:, local) and global stay on the machine. The write is queued in the outbox first, then sent
// with the 5 s timeout: acknowledged means on the hub, or safely queued for the next try.

const SCOPES_TTL_MS = 10 * 60_000;
const SCOPES_TIMEOUT_MS = 1_500;
const NEVER_REMOTE = new Set(['user', 'local', 'global']);
const TEAM_KINDS = new Set(['group', 'org']);

interface ScopesCache {
  url: string;
  at: number;
  writable: string[];
  readable: string[];
}

const cacheFile = (storeRoot: string) => join(storeRoot, 'remote', 'scopes.json');

/** The hub's scopes for this token: from the cache when fresh, else asked (null when it cannot be). */
export async function hubScopes(
  storeRoot: string,
  remote: RemoteConfig,
  opts: { refresh?: boolean } = {},
): Promise<{ writable: string[]; readable: string[] } | null> {
  const file = cacheFile(storeRoot);
  if (!opts.refresh && existsSync(file)) {
    try {
      const c = JSON.parse(readFileSync(file, 'utf8')) as ScopesCache;
      if (c.url === remote.url && Date.now() - c.at < SCOPES_TTL_MS) return c;
    } catch {
      /* asked again below */
    }
  }
  try {
    const me = await new HubClient(remote).me(SCOPES_TIMEOUT_MS);
    const c: ScopesCache = { url: remote.url, at: Date.now(), writable: me.writable, readable: me.readable };
    writeCacheFile(file, JSON.stringify(c));
    return c;
  } catch (err) {
    if (err instanceof RemoteFailure) return null;
    throw err;
  }
}

/** Whether a write to `scope` belongs on the hub. */
export async function goesToHub(storeRoot: string, remote: RemoteConfig | null, scope: string): Promise<boolean> {
  if (!remote || NEVER_REMOTE.has(scopeKind(scope))) return false;
  // A team scope goes to the hub, which refuses it clearly when the user may not write it.
  if (TEAM_KINDS.has(scopeKind(scope))) return true;
  return (await hubScopes(storeRoot, remote))?.writable.includes(scope) ?? false;
}

export interface HubLearn {
  outcome: 'delivered' | 'queued' | 'refused';
  /** The engram as the hub stored it (delivered). */
  engram?: Record<string, unknown>;
  action?: string;
  entry: OutboxEntry;
  error?: string;
  /** Earlier queued writes this learn's success sent along (delivered, refused, still waiting). */
  flushed?: FlushReport;
}

/**
 * Learns on the hub through the outbox: queued durably, then sent within what is left of the 5 s
 * since `startedAt`. A write the hub refuses at once is taken out of the outbox: the caller
 * reports the refusal, and nothing is left to retry.
 */
export async function learnOnHub(
  storeRoot: string,
  remote: RemoteConfig,
  body: Record<string, unknown>,
  startedAt = Date.now(),
): Promise<HubLearn> {
  const entry = enqueue(storeRoot, remote, '/engrams', body);
  const d = await deliver(storeRoot, remote, entry, Math.max(2_000, REMOTE_WRITE_TIMEOUT_MS - (Date.now() - startedAt)));
  if (d.outcome === 'refused') dropEntry(storeRoot, entry.key);
  const r = resultOf(d);
  // The hub took this one: what waited before it goes too (bounded by one write's timeout).
  if (r.outcome === 'delivered') {
    const flushed = reportOf(storeRoot, remote, await sendWithin(storeRoot, remote, REMOTE_WRITE_TIMEOUT_MS));
    if (flushed) r.flushed = flushed;
  }
  return r;
}

function resultOf(d: Delivery): HubLearn {
  // Taken: a drainer in another process removed the entry first; the hub's answer is ours all the same.
  if (d.outcome !== 'delivered' && d.outcome !== 'taken')
    return { outcome: d.outcome, entry: d.entry, ...(d.error ? { error: d.error } : {}) };
  return { outcome: 'delivered', engram: d.answer, entry: d.entry };
}

export interface FlushReport {
  delivered: number;
  refused: number;
  /** Still waiting (the hub did not take them). */
  pending: number;
  error?: string;
}

/** Sends what waits in the outbox for this hub (sync, session start, svc_outbox retry). */
export async function sendPending(storeRoot: string, remote: RemoteConfig | null): Promise<FlushReport | null> {
  if (!remote || !existsSync(outboxDir(storeRoot))) return null;
  return reportOf(storeRoot, remote, await flushOutbox(storeRoot, remote));
}

function reportOf(storeRoot: string, remote: RemoteConfig, deliveries: Delivery[]): FlushReport | null {
  const done = deliveries.filter((d) => d.outcome !== 'taken');
  if (done.length === 0) return null;
  const waiting = done.find((d) => d.outcome === 'queued');
  return {
    delivered: done.filter((d) => d.outcome === 'delivered').length,
    refused: done.filter((d) => d.outcome === 'refused').length,
    pending: readOutbox(storeRoot).entries.filter((e) => !e.refused && e.url === remote.url).length,
    ...(waiting?.error ? { error: waiting.error } : {}),
  };
}

/** One line about a flush, for a terminal or a hook's log. */
export function flushLine(r: FlushReport): string {
  const parts = [
    r.delivered ? `${r.delivered} queued write${r.delivered === 1 ? '' : 's'} sent to the hub` : '',
    r.refused ? `${r.refused} refused by the hub (svc outbox shows why)` : '',
    r.pending ? `the rest still waits (${r.error})` : '',
  ];
  return parts.filter(Boolean).join('; ');
}

/** The hub as rescope's publisher: a local engram learned in a team scope through the outbox. */
export function hubPublisher(storeRoot: string, remote: RemoteConfig): Publisher {
  return {
    goesToHub: (scope) => goesToHub(storeRoot, remote, scope),
    async publish(e, scope) {
      const body = Object.fromEntries(
        Object.entries({
          statement: e.statement,
          type: e.type,
          scope,
          domain: e.domain,
          tags: e.tags,
          rationale: e.rationale,
          source: `published from ${e.id}`,
        }).filter(([, v]) => v !== undefined && v !== null),
      );
      const r = await learnOnHub(storeRoot, remote, body);
      return { outcome: r.outcome, ...(r.engram?.id ? { id: String(r.engram.id) } : {}), ...(r.error ? { error: r.error } : {}) };
    },
  };
}
