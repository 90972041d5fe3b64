import * as fs from 'node:fs';
import { existsSync } from 'node:fs';
import type { LocalStore } from './local-store.js';
import { SvcError, invalid } from '../errors.js';
import { planMerge, type SyncConflict } from './sync-merge.js';
import { readConflicts, type StoredConflict } from './sync-conflicts.js';
import { fetchBranch, loadGit, pushBranch, redactUrl, remoteKind, resolveRef } from './sync-transport.js';
import { branchOf, getRemote, setRemote, writeState } from './git-sync-state.js';
import { author, commitLocal, machinePrefix, planCommit } from './git-sync-plan.js';
import { applyPlan, mergeEntries, remoteChanges } from './git-sync-merge.js';

// Git-based sync of a local store with a remote: over HTTP(S) through isomorphic-git, over SSH
// or to a local path through the system git (sync-transport.ts).
//
//   svc sync <url>   sets the remote (first time: origin; a different address replaces it),
//                    then syncs; bare `svc sync` syncs with the remote already set.
//   a sync =  commit local changes  ->  fetch  ->  merge  ->  push  (retried when the push
//             races another machine's push).
//
// What is committed: everything the store's .gitignore does not exclude (engram YAML,
// episodes and events logs, sessions, config, packs, conflict records ...), EXCEPT
//   - engrams of scope `local`: their files are never staged (an engram that turns local is
//     removed from the tree, its file stays on disk and keeps being served); they stay
//     "untracked" in git's eyes. A YAML file that cannot be parsed is not committed either
//     (its scope is unknown) and is reported;
//   - lines of the events logs that name a local engram (they would leak its id and history):
//     the committed blob of an events log is the filtered file, the file on disk keeps all.
// The merge is svc's own, three-way and file by file, planned in sync-merge.ts (see the rules
// there: counters add up, lists unite, and what both machines changed differently goes into a
// synced conflict record, never lost and never marked up with conflict markers).
// Machine-local and derived files (local.yaml with the id prefix and the store registry,
// index.db*, models/, quarantine/, backups/, bin/, logs/, temp files) are never committed and
// never taken from a remote, even when the .gitignore is missing. After a pull the caller
// reconciles the index (new and changed files are picked up): see `reconcileAfterSync`.
// Staging is done in batches (one index write per step, not one per file), so a sync costs in
// proportion to what changed.
// This file runs a sync (one store, then every store); beside it: the remote, state file and
// status (git-sync-state.ts), the commit plan and staging (git-sync-plan.ts), the merge's git
// side (git-sync-merge.ts) and the lines printed for the user (git-sync-text.ts).

// Re-exported for the callers (and tests) that import them from here.

const MAX_PUSH_ATTEMPTS = 3;

export interface SyncOptions {
  /** A remote address to set before syncing. */
  remote?: string;
  /** Push after the merge (default true). */
  push?: boolean;
  /** Commit local changes first (default true); false for stores svc must not write (read-only). */
  commit?: boolean;
  now?: () => Date;
}

export interface SyncReport {
  root: string;
  remote: string | null;
  /** What happened to the remote setting: added (first time), changed, or unchanged. */
  remote_set: 'added' | 'changed' | 'unchanged' | null;
  branch: string;
  /** The commit of local changes, when there were any. */
  committed: string | null;
  committed_files: number;
  /** Engrams of scope local kept out of the commit (still served on this machine). */
  local_only: number;
  merge: 'remote-empty' | 'up-to-date' | 'ahead' | 'fast-forward' | 'merged';
  pulled: { files: number; engrams: number; removed: number };
  /** Logs whose lines were unioned (both sides appended). */
  merged_logs: string[];
  /** Engrams merged field by field (counters added, lists united, different fields taken). */
  merged_engrams: string[];
  /** What this sync found: changed on both machines (the other version is in a conflict record). */
  conflicts: SyncConflict[];
  /** Every conflict record in the store after the sync (found here or on another machine), to resolve. */
  open_conflicts: Array<Pick<StoredConflict, 'id' | 'path' | 'engram_id' | 'fields' | 'detected_on' | 'detected_at'>>;
  pushed: boolean;
  head: string | null;
  /** Files that were not committed because they cannot be read as engrams (scope unknown). */
  skipped: string[];
}

// ------------------------------------------------------------------------------ sync

/**
 * Syncs `store` with its remote: commit, fetch, merge, push. Holds the store's write lock
 * while it commits and merges (never while on the network). The caller reconciles the index
 * afterwards (`reconcileAfterSync`).
 */
export async function syncStore(store: LocalStore, opts: SyncOptions = {}): Promise<SyncReport> {
  const root = store.root;
  const now = opts.now ?? (() => new Date());
  const { git } = await loadGit();
  const cache = {};
  const locked = <T>(fn: () => Promise<T>): Promise<T> => store.write(async () => fn());

  const remoteSet = opts.remote !== undefined ? await locked(() => setRemote(root, opts.remote!)) : null;
  const url = await getRemote(root);
  if (!url) throw invalid(`the store at ${root} has no remote: run svc sync <address> once to set it`);
  remoteKind(url);
  const branch = await branchOf(root);
  const report: SyncReport = {
    root,
    remote: redactUrl(url),
    remote_set: remoteSet,
    branch,
    committed: null,
    committed_files: 0,
    local_only: 0,
    merge: 'up-to-date',
    pulled: { files: 0, engrams: 0, removed: 0 },
    merged_logs: [],
    merged_engrams: [],
    conflicts: [],
    open_conflicts: [],
    pushed: false,
    head: null,
    skipped: [],
  };
  const doCommit = opts.commit ?? true;
  const doPush = (opts.push ?? true) && doCommit;

  const commitStep = async (): Promise<void> => {
    if (doCommit) {
      const c = await commitLocal(root, now(), cache);
      if (c.oid) {
        report.committed = c.oid;
        report.committed_files += c.files;
      }
      report.local_only = c.plan.localOnly;
      report.skipped = c.plan.skipped;
    } else {
      const plan = await planCommit(root, cache);
      report.local_only = plan.localOnly;
      if (plan.changes.length) {
        throw new SvcError(
          'conflict',
          `the store at ${root} is read-only for svc but has uncommitted changes (${plan.changes
            .map((c) => c.path)
            .slice(0, 3)
            .join(', ')}${plan.changes.length > 3 ? ', ...' : ''}): not pulling`,
        );
      }
    }
  };

  await locked(commitStep);

  for (let attempt = 1; ; attempt++) {
    const remoteHead = await fetchBranch(root, url, branch, cache);

    await locked(async () => {
      await commitStep(); // whatever was written while we were on the network
      const local = await resolveRef(root, 'HEAD');
      if (!remoteHead) {
        report.merge = 'remote-empty';
        return;
      }
      if (local === remoteHead) {
        report.merge = 'up-to-date';
        return;
      }
      if (local && (await git.isDescendent({ fs, dir: root, oid: local, ancestor: remoteHead, depth: -1, cache }))) {
        report.merge = 'ahead';
        return;
      }
      const base = local ? (((await git.findMergeBase({ fs, dir: root, oids: [local, remoteHead], cache })) as string[])[0] ?? null) : null;
      const entries = await mergeEntries(root, await remoteChanges(root, base, remoteHead, cache), cache);
      const plan = planMerge(entries, {
        localIds: (await planCommit(root, cache)).localIds,
        remoteCommit: remoteHead,
        now: now(),
        machine: machinePrefix(root),
      });
      await applyPlan(root, plan, cache);
      report.pulled.files += plan.pulled.files;
      report.pulled.engrams += plan.pulled.engrams;
      report.pulled.removed += plan.pulled.removed;
      report.merged_logs.push(...plan.merged_logs);
      report.merged_engrams.push(...plan.merged_engrams);
      report.conflicts.push(...plan.conflicts);
      if (local === null || (base === local && plan.tookRemote)) {
        await git.writeRef({ fs, dir: root, ref: `refs/heads/${branch}`, value: remoteHead, force: true });
        report.merge = 'fast-forward';
      } else {
        await git.commit({
          fs,
          dir: root,
          cache,
          author: await author(root, now()),
          parent: [local, remoteHead],
          message:
            `svc sync: merge ${redactUrl(url)}` +
            (plan.conflicts.length
              ? `\n\nConflicts (the other versions are in conflicts/):\n${plan.conflicts.map((c) => `  ${c.path}`).join('\n')}`
              : ''),
        });
        report.merge = 'merged';
      }
    });

    if (!doPush) break;
    const head = await resolveRef(root, 'HEAD');
    if (!head || head === remoteHead) break;
    const pushed = await pushBranch(root, url, branch, cache);
    if (pushed === 'pushed') {
      report.pushed = true;
      break;
    }
    // Someone pushed first: fetch, merge, push again.
    if (attempt >= MAX_PUSH_ATTEMPTS)
      throw new SvcError('storage', `the remote kept moving while svc pushed (${MAX_PUSH_ATTEMPTS} attempts): run svc sync again`);
  }

  report.head = await resolveRef(root, 'HEAD');
  report.open_conflicts = readConflicts(root).conflicts.map(({ id, path, engram_id, fields, detected_on, detected_at }) => ({
    id,
    path,
    engram_id,
    fields,
    detected_on,
    detected_at,
  }));
  writeState(root, {
    last_sync: now().toISOString(),
    remote: redactUrl(url),
    last_result:
      `${report.merge}; pushed: ${report.pushed}; ${report.pulled.files} file(s) pulled` +
      (report.open_conflicts.length ? `; ${report.open_conflicts.length} open conflict(s)` : ''),
  });
  return report;
}

/**
 * After a sync, brings the index up to date with the files the merge wrote. A fresh handle
 * with a full reconcile compares every file's stamp, so changes that kept the folder's
 * mtime (a rewritten file) are found too; the caller's open handles share the index.
 */
export async function reconcileAfterSync(root: string): Promise<string[]> {
  const { LocalStore } = await import('./local-store.js');
  const fresh = await LocalStore.open(root, 'full');
  const warnings = fresh.warnings.splice(0);
  fresh.close();
  return warnings;
}

// ------------------------------------------------------------------------------ every store

export interface StoreSyncResult {
  scope: string;
  path: string;
  readonly: boolean;
  report?: SyncReport;
  /** Why this store was not synced (no remote, unavailable) or what failed. */
  skipped?: string;
  error?: string;
}

export interface SyncAllReport {
  /** The primary store's sync; null when it has no remote (and other stores were synced). */
  primary: SyncReport | null;
  /** Registered stores (svc stores add) that have a remote of their own. */
  stores: StoreSyncResult[];
  warnings: string[];
}

/**
 * `svc sync [remote]`: syncs the primary store (setting its remote first when given), then
 * every registered store that has a git remote of its own (a team repository checked out as
 * a store): read-only ones are pulled only, never committed to or pushed. A failure of a
 * registered store is reported, not thrown; a failure of the primary store throws.
 */
/**
 * Syncs the store and every registered store with a git remote of its own. Without any git
 * remote that is an error, unless `gitOptional` (a project whose hub is its only remote).
 */
export async function syncStores(
  root: string,
  opts: { remote?: string; now?: () => Date; gitOptional?: boolean } = {},
): Promise<SyncAllReport> {
  const { LocalStore } = await import('./local-store.js');
  const { readRegistry } = await import('./store-registry.js');
  const warnings: string[] = [];
  const primary = await LocalStore.open(root, 'fast');
  let primaryReport: SyncReport | null = null;
  try {
    warnings.push(...primary.warnings.splice(0));
    const entries = await readRegistry(primary.root);
    const hasRemote = opts.remote !== undefined || (await getRemote(primary.root)) !== null;
    if (!hasRemote) {
      const others = [];
      for (const e of entries) if (existsSync(e.path) && (await getRemote(e.path))) others.push(e);
      if (others.length === 0 && !opts.gitOptional)
        throw invalid(`no remote is set for the store at ${primary.root}: run svc sync <address> once (an http:// or https:// git remote)`);
      if (others.length > 0)
        warnings.push(`the store at ${primary.root} has no remote (svc sync <address> sets one); syncing the registered stores only`);
    } else {
      primaryReport = await syncStore(primary, { remote: opts.remote, now: opts.now });
      warnings.push(...(await reconcileAfterSync(primary.root)));
    }
    const stores: StoreSyncResult[] = [];
    for (const e of entries) {
      const row: StoreSyncResult = { scope: e.scope, path: e.path, readonly: e.readonly };
      stores.push(row);
      if (!existsSync(e.path)) {
        row.skipped = 'the folder does not exist';
        continue;
      }
      if (!(await getRemote(e.path))) {
        row.skipped = 'no git remote';
        continue;
      }
      let store: LocalStore | undefined;
      try {
        store = await LocalStore.open(e.path, 'fast');
        row.report = await syncStore(store, { push: !e.readonly, commit: !e.readonly, now: opts.now });
        warnings.push(...(await reconcileAfterSync(e.path)).map((w) => `${e.path}: ${w}`));
      } catch (err) {
        row.error = (err as Error).message;
        warnings.push(`the store for scope ${e.scope} at ${e.path} did not sync: ${row.error}`);
      } finally {
        store?.close();
      }
    }
    return { primary: primaryReport, stores, warnings };
  } finally {
    primary.close();
  }
}
