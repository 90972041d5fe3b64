import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, removeOrphanTemps, writeFileDurable } from '../store/durable-write.js';
import { nodeCrypto } from '../lazy-crypto.js';
import { contentHash } from '../model/content-hash.js';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';

// Writes on their way to the hub, kept in the store (<store>/remote/outbox/, one JSON file each) before
// the first attempt: a write is never only in memory, so neither a hub that is down nor a `kill
// -9` loses it. Each carries an idempotency key the hub honours (Idempotency-Key), so sending it
// again after a lost answer never writes twice. A refusal that retrying cannot fix (400, 403,
// 422, ...) is kept, marked refused with the hub's reason, and not sent again.
//
// The hub keeps an idempotency key for 24 hours. An entry older than that (a crash between the
// hub's commit and the file's removal, then a day offline) is first looked up on the hub by its
// content hash: found there with a write since it was queued, it is taken as delivered, not
// learned again. Several processes may drain at once: the one that removes an entry's file is
// the one that counts it as sent.

export const REMOTE_WRITE_TIMEOUT_MS = 5_000;
/** How long the hub honours an Idempotency-Key (less a margin for clocks). */
export const IDEMPOTENCY_WINDOW_MS = 23 * 3600_000;

export interface OutboxEntry {
  key: string;
  /** The hub it goes to. */
  url: string;
  method: 'POST';
  path: string;
  body: Record<string, unknown>;
  queued_at: string;
  attempts: number;
  last_error?: string;
  /** Set when the hub refused it for good. */
  refused?: { status: number | null; reason: string; at: string };
}

export interface Delivery {
  entry: OutboxEntry;
  /** `taken`: another process delivered it meanwhile (not counted here). */
  outcome: 'delivered' | 'queued' | 'refused' | 'taken';
  /** The hub's answer, when delivered. */
  answer?: Record<string, unknown>;
  error?: string;
}

export const outboxDir = (storeRoot: string) => join(storeRoot, 'remote', 'outbox');
const fileOf = (storeRoot: string, key: string) => join(outboxDir(storeRoot), `${key}.json`);

/** Queues a write (durably) and returns its entry. */
export function enqueue(
  storeRoot: string,
  remote: RemoteConfig,
  path: string,
  body: Record<string, unknown>,
  now = new Date(),
): OutboxEntry {
  const dir = outboxDir(storeRoot);
  mkdirSync(dir, { recursive: true });
  // Sorts by time: entries are sent in the order they were queued.
  const key = `${now.toISOString().replace(/[-:.]/g, '')}-${nodeCrypto().randomUUID()}`;
  const entry: OutboxEntry = { key, url: remote.url, method: 'POST', path, body, queued_at: now.toISOString(), attempts: 0 };
  writeFileDurable(fileOf(storeRoot, key), JSON.stringify(entry, null, 2) + '\n');
  return entry;
}

/** Every queued write, oldest first; `problems` names files that could not be read. */
export function readOutbox(storeRoot: string): { entries: OutboxEntry[]; problems: string[] } {
  const dir = outboxDir(storeRoot);
  if (!existsSync(dir)) return { entries: [], problems: [] };
  // Temp files of writers that were killed mid-write.
  removeOrphanTemps(dir);
  const entries: OutboxEntry[] = [];
  const problems: string[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.json'))
    .sort()) {
    try {
      entries.push(JSON.parse(readFileSync(join(dir, name), 'utf8')) as OutboxEntry);
    } catch (err) {
      problems.push(`${join(dir, name)}: ${(err as Error).message}`);
    }
  }
  return { entries, problems };
}

/** Sends one entry; on success removes it, otherwise records why. */
export async function deliver(
  storeRoot: string,
  remote: RemoteConfig,
  entry: OutboxEntry,
  deadlineMs = REMOTE_WRITE_TIMEOUT_MS,
  now = Date.now(),
): Promise<Delivery> {
  const client = new HubClient(remote);
  const file = fileOf(storeRoot, entry.key);
  try {
    const landed = now - Date.parse(entry.queued_at) > IDEMPOTENCY_WINDOW_MS ? await landedEarlier(client, entry, deadlineMs) : undefined;
    const r = landed
      ? { body: landed }
      : await client.call<Record<string, unknown>>(entry.method, entry.path, deadlineMs, entry.body, { 'idempotency-key': entry.key });
    return { entry, outcome: removeEntryFile(storeRoot, file) ? 'delivered' : 'taken', answer: r.body };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    const next: OutboxEntry = { ...entry, attempts: entry.attempts + 1, last_error: err.message };
    if (err.kind === 'refused') next.refused = { status: err.status, reason: err.message, at: new Date().toISOString() };
    if (existsSync(file)) writeFileDurable(file, JSON.stringify(next, null, 2) + '\n');
    return { entry: next, outcome: err.kind === 'refused' ? 'refused' : 'queued', error: err.message };
  }
}

/**
 * For an entry older than the hub's idempotency window: the engram its write made, when the hub
 * holds one with its content in its scope, written since the entry was queued.
 */
async function landedEarlier(client: HubClient, entry: OutboxEntry, deadlineMs: number): Promise<Record<string, unknown> | undefined> {
  const statement = entry.body.statement;
  if (entry.path !== '/engrams' || typeof statement !== 'string') return undefined;
  const scope = typeof entry.body.scope === 'string' ? entry.body.scope : undefined;
  const found = await client.list({ content_hash: contentHash(statement), ...(scope ? { scope } : {}) }, 50, deadlineMs);
  return found.items.find((e) =>
    ((e.sources as Array<{ stored_at?: string }> | undefined) ?? []).some((s) => (s.stored_at ?? '') >= entry.queued_at),
  );
}

/** Removes a delivered entry's file; false when another process removed it first (and so counts it). */
function removeEntryFile(storeRoot: string, file: string): boolean {
  try {
    unlinkSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  fsyncDir(outboxDir(storeRoot));
  return true;
}

/**
 * Sends every pending entry bound for this hub, oldest first, stopping at the first one the hub
 * could not take (it is down: the rest would wait as long). Refused entries are left alone.
 */
export async function flushOutbox(storeRoot: string, remote: RemoteConfig, deadlineMs = REMOTE_WRITE_TIMEOUT_MS): Promise<Delivery[]> {
  const done: Delivery[] = [];
  for (const entry of readOutbox(storeRoot).entries) {
    if (entry.refused || entry.url !== remote.url) continue;
    const d = await deliver(storeRoot, remote, entry, deadlineMs);
    done.push(d);
    if (d.outcome === 'queued') break;
  }
  return done;
}

/** Forgets a refused entry (after its report was read). */
export function dropEntry(storeRoot: string, key: string): boolean {
  return removeEntryFile(storeRoot, fileOf(storeRoot, key));
}
