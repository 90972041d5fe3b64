import * as fs from 'node:fs';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileDurable } from './durable-write.js';
import { ENGRAM_PATH } from './sync-merge.js';
import { readConflicts } from './sync-conflicts.js';
import { loadGit, REMOTE, remoteKind, resolveRef } from './sync-transport.js';
import { planCommit } from './git-sync-plan.js';

// What git sync knows of a store between syncs: its remote, the state file it leaves in .git
// (when it last synced and how that went), and where the store stands against the remote
// (`svc sync --status`), all without touching the network.

const STATE_FILE = 'svc-sync.json';

export interface SyncStatus {
  root: string;
  remote: string | null;
  branch: string;
  head: string | null;
  /** The remote branch as of the last fetch. */
  remote_head: string | null;
  ahead: number;
  behind: number;
  last_sync: string | null;
  last_result: string | null;
  uncommitted: { engrams: number; other: number; files: string[] };
  local_only: number;
  /** Sync conflicts waiting for a decision (svc conflicts). */
  conflicts: number;
  /** Queued writes to remote team scopes: none are queued by git sync. */
  outbox: number;
}

export interface SyncState {
  last_sync?: string;
  last_result?: string;
  remote?: string;
}

export async function getRemote(root: string): Promise<string | null> {
  if (!existsSync(join(root, '.git'))) return null;
  const { git } = await loadGit();
  const remotes = await git.listRemotes({ fs, dir: root });
  return remotes.find((r) => r.remote === REMOTE)?.url ?? null;
}

/** Sets origin to `url`; returns what changed. */
export async function setRemote(root: string, url: string): Promise<'added' | 'changed' | 'unchanged'> {
  remoteKind(url);
  const { git } = await loadGit();
  const current = await getRemote(root);
  if (current === url) return 'unchanged';
  await git.addRemote({ fs, dir: root, remote: REMOTE, url, force: true });
  return current === null ? 'added' : 'changed';
}

export function readState(root: string): SyncState {
  try {
    return JSON.parse(readFileSync(join(root, '.git', STATE_FILE), 'utf8')) as SyncState;
  } catch {
    return {};
  }
}

export function writeState(root: string, state: SyncState): void {
  writeFileDurable(join(root, '.git', STATE_FILE), JSON.stringify(state, null, 2) + '\n');
}

export async function branchOf(root: string): Promise<string> {
  const { git } = await loadGit();
  return (await git.currentBranch({ fs, dir: root })) || 'main';
}

async function ancestors(root: string, oid: string | null, cache: object): Promise<Set<string>> {
  if (!oid) return new Set();
  const { git } = await loadGit();
  const log = await git.log({ fs, dir: root, ref: oid, cache });
  return new Set(log.map((c) => c.oid));
}

/** Where the store stands against its remote, without touching the network. */
export async function syncStatus(root: string): Promise<SyncStatus> {
  const cache = {};
  const hasGit = existsSync(join(root, '.git'));
  const branch = hasGit ? await branchOf(root) : 'main';
  const head = hasGit ? await resolveRef(root, 'HEAD') : null;
  const remoteHead = hasGit ? await resolveRef(root, `refs/remotes/${REMOTE}/${branch}`) : null;
  const mine = await ancestors(root, head, cache);
  const theirs = await ancestors(root, remoteHead, cache);
  const plan = hasGit ? await planCommit(root, cache) : null;
  const state = readState(root);
  const files = plan ? plan.changes.map((c) => c.path) : [];
  return {
    root,
    remote: (await getRemote(root)) ?? null,
    branch,
    head,
    remote_head: remoteHead,
    ahead: [...mine].filter((c) => !theirs.has(c)).length,
    behind: [...theirs].filter((c) => !mine.has(c)).length,
    last_sync: state.last_sync ?? null,
    last_result: state.last_result ?? null,
    uncommitted: {
      engrams: files.filter((f) => ENGRAM_PATH.test(f)).length,
      other: files.filter((f) => !ENGRAM_PATH.test(f)).length,
      files,
    },
    local_only: plan?.localOnly ?? 0,
    conflicts: readConflicts(root).conflicts.length,
    outbox: 0,
  };
}
