import * as fs from 'node:fs';
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { LocalStore } from './local-store.js';
import { SvcError, invalid } from '../errors.js';
import { fsyncDir, writeFileDurable, writeFilesDurable } from './durable-write.js';
import { committedLog, LOG_PATH } from './sync-logs.js';
import { ENGRAM_PATH, MACHINE_LOCAL, planMerge, scopeOfText, type MergeEntry, type MergePlan, type SyncConflict } from './sync-merge.js';
import { readConflicts, type StoredConflict } from './sync-conflicts.js';
import { fetchBranch, loadGit, pushBranch, redactUrl, REMOTE, remoteKind, resolveRef } from './sync-transport.js';


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

export { redactUrl } from './sync-transport.js';
export type { SyncConflict } from './sync-merge.js';

const STATE_FILE = 'svc-sync.json';
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

interface SyncState {
  last_sync?: string;
  last_result?: string;
  remote?: string;
}

// ------------------------------------------------------------------------------ remote

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

// ------------------------------------------------------------------------------ status

function readState(root: string): SyncState {
  try {
    return JSON.parse(readFileSync(join(root, '.git', STATE_FILE), 'utf8')) as SyncState;
  } catch {
    return {};
  }
}

function writeState(root: string, state: SyncState): void {
  writeFileDurable(join(root, '.git', STATE_FILE), JSON.stringify(state, null, 2) + '\n');
}

async function branchOf(root: string): Promise<string> {
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

// ------------------------------------------------------------------------------ commit

interface Change {
  path: string;
  /** remove: drop from the index; add: stage the working file; blob: stage this content. */
  action: 'remove' | 'add' | 'blob';
  blob?: string;
}

interface CommitPlan {
  changes: Change[];
  /** Index fixes that change nothing against HEAD (re-stage an unchanged file, drop a stale entry). */
  fixes: Change[];
  localOnly: number;
  localIds: Set<string>;
  skipped: string[];
}

/** The scope of an engram file, or undefined when it cannot be read. */
function scopeOfFile(path: string): string | undefined {
  try {
    return scopeOfText(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** What committing the working tree would stage, without staging anything. */
async function planCommit(root: string, cache: object): Promise<CommitPlan> {
  const { git } = await loadGit();
  const matrix = await git.statusMatrix({ fs, dir: root, cache });
  const headOid = await resolveRef(root, 'HEAD');
  const localIds = new Set<string>();
  const localPaths = new Set<string>();
  const skipped: string[] = [];
  // Pass 1: which engram files are local (or unreadable), so their lines and files stay home.
  for (const [path, head, work] of matrix) {
    const m = ENGRAM_PATH.exec(path);
    if (!m || work === 0 || (head === 1 && work === 1)) continue;
    const scope = scopeOfFile(join(root, path));
    if (scope === undefined) {
      skipped.push(path);
      localPaths.add(path);
    } else if (scope === 'local') {
      localIds.add(m[1]!);
      localPaths.add(path);
    }
  }
  const changes: Change[] = [];
  const fixes: Change[] = [];
  let localOnly = 0;
  for (const [path, head, work, stage] of matrix) {
    const drop = () => {
      if (head === 1) changes.push({ path, action: 'remove' });
      else if (stage !== 0) fixes.push({ path, action: 'remove' });
    };
    if (MACHINE_LOCAL.test(path)) {
      drop(); // never committed, even when a store lacks its .gitignore (an old or hand-made store)
      continue;
    }
    if (localPaths.has(path)) {
      if (!skipped.includes(path)) localOnly += 1;
      drop();
      continue;
    }
    if (work === 0) {
      drop();
      continue;
    }
    if (LOG_PATH.test(path) && work === 2) {
      const blob = committedLog(path, readFileSync(join(root, path), 'utf8'), localIds);
      let same = false;
      if (head === 1 && headOid) {
        const { blob: committed } = await git.readBlob({ fs, dir: root, oid: headOid, filepath: path, cache });
        same = Buffer.from(committed).toString('utf8') === blob;
      }
      (same ? fixes : changes).push({ path, action: 'blob', blob });
      continue;
    }
    if (work === 2) changes.push({ path, action: 'add' });
    else if (stage !== 1) fixes.push({ path, action: 'add' });
  }
  return { changes, fixes, localOnly, localIds, skipped };
}

/** Stages a batch: one index update for all the working files to add, then blobs and removals. */
async function stageAll(root: string, changes: Change[], cache: object): Promise<void> {
  const { git } = await loadGit();
  const adds = changes.filter((c) => c.action === 'add').map((c) => c.path);
  if (adds.length) await git.add({ fs, dir: root, filepath: adds, cache });
  for (const c of changes) {
    if (c.action === 'remove') {
      try {
        await git.remove({ fs, dir: root, filepath: c.path, cache });
      } catch {
        /* not in the index */
      }
    } else if (c.action === 'blob') {
      const oid = await git.writeBlob({ fs, dir: root, blob: Buffer.from(c.blob ?? '', 'utf8') });
      await git.updateIndex({ fs, dir: root, filepath: c.path, oid, add: true, cache });
    }
  }
}

async function author(root: string, now: Date): Promise<{ name: string; email: string; timestamp: number; timezoneOffset: number }> {
  const { git } = await loadGit();
  const name = (await git.getConfig({ fs, dir: root, path: 'user.name' })) as string | undefined;
  const email = (await git.getConfig({ fs, dir: root, path: 'user.email' })) as string | undefined;
  const prefix = machinePrefix(root);
  return {
    name: name ?? `svc (${prefix})`,
    email: email ?? `svc+${prefix.toLowerCase()}@localhost`,
    timestamp: Math.floor(now.getTime() / 1000),
    timezoneOffset: 0,
  };
}

/** This store's id prefix (local.yaml), naming the machine in commits and conflict records. */
function machinePrefix(root: string): string {
  try {
    return /^id_prefix:\s*(\S+)/m.exec(readFileSync(join(root, 'local.yaml'), 'utf8'))?.[1] ?? 'svc';
  } catch {
    return 'svc';
  }
}

/** Commits the store's changes (see the header for what is left out). Returns the commit, or null. */
async function commitLocal(root: string, now: Date, cache: object): Promise<{ oid: string | null; files: number; plan: CommitPlan }> {
  const { git } = await loadGit();
  const plan = await planCommit(root, cache);
  await stageAll(root, [...plan.fixes, ...plan.changes], cache);
  if (plan.changes.length === 0) return { oid: null, files: 0, plan };
  const engrams = plan.changes.filter((c) => ENGRAM_PATH.test(c.path)).length;
  const oid = await git.commit({
    fs,
    dir: root,
    cache,
    author: await author(root, now),
    message: `svc: ${plan.changes.length} file(s) changed (${engrams} engram(s))`,
  });
  return { oid, files: plan.changes.length, plan };
}

// ------------------------------------------------------------------------------ merge

interface TreeChange {
  path: string;
  base: string | null;
  remote: string | null;
}

/** Files whose blob differs between `base` (null: empty tree) and `remote`; unchanged subtrees are skipped. */
async function remoteChanges(root: string, base: string | null, remote: string, cache: object): Promise<TreeChange[]> {
  const { git } = await loadGit();
  const trees = base ? [git.TREE({ ref: base }), git.TREE({ ref: remote })] : [git.TREE({ ref: remote })];
  const result = (await git.walk({
    fs,
    dir: root,
    cache,
    trees,
    map: async (path, entries) => {
      const [b, r] = base ? entries : [null, entries[0]];
      const bOid = b ? await b.oid() : null;
      const rOid = r ? await r.oid() : null;
      if (bOid === rOid) return null; // unchanged file or subtree: skip it whole
      if (path === '.') return undefined;
      const bType = b ? await b.type() : null;
      const rType = r ? await r.type() : null;
      if (bType === 'tree' || rType === 'tree') return undefined; // descend
      return { path, base: bType === 'blob' ? bOid : null, remote: rType === 'blob' ? rOid : null } satisfies TreeChange;
    },
  })) as TreeChange[] | undefined;
  return (result ?? []).filter((c) => c && typeof c.path === 'string');
}

async function blob(root: string, oid: string | null, cache: object): Promise<Buffer | null> {
  if (oid === null) return null;
  const { git } = await loadGit();
  return Buffer.from((await git.readBlob({ fs, dir: root, oid, cache })).blob);
}

/** What the merge needs of each remotely changed file: its base, working and remote content. */
async function mergeEntries(root: string, changes: TreeChange[], cache: object): Promise<MergeEntry[]> {
  const out: MergeEntry[] = [];
  for (const c of changes) {
    const abs = join(root, c.path);
    out.push({ path: c.path, base: await blob(root, c.base, cache), local: existsSync(abs) ? readFileSync(abs) : null, remote: await blob(root, c.remote, cache) });
  }
  return out;
}

/** Applies a merge plan: the working tree (durably, one folder fsync per folder), then the index in a batch. */
async function applyPlan(root: string, plan: MergePlan, cache: object): Promise<void> {
  writeFilesDurable(
    plan.write.map((w) => [join(root, w.path), w.data] as const),
    { mkdir: true },
  );
  const dirs = new Set<string>();
  for (const path of plan.remove) {
    const abs = join(root, path);
    if (existsSync(abs)) unlinkSync(abs);
    dirs.add(dirname(abs));
  }
  for (const d of dirs) fsyncDir(d);
  // The working file holds what is staged, except for logs (their committed blob is sorted).
  await stageAll(
    root,
    plan.stage.map((e): Change =>
      'remove' in e ? { path: e.path, action: 'remove' } : LOG_PATH.test(e.path) ? { path: e.path, action: 'blob', blob: e.data.toString('utf8') } : { path: e.path, action: 'add' },
    ),
    cache,
  );
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
        throw new SvcError('conflict', `the store at ${root} is read-only for svc but has uncommitted changes (${plan.changes.map((c) => c.path).slice(0, 3).join(', ')}${plan.changes.length > 3 ? ', ...' : ''}): not pulling`);
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
      const base = local ? ((await git.findMergeBase({ fs, dir: root, oids: [local, remoteHead], cache })) as string[])[0] ?? null : null;
      const entries = await mergeEntries(root, await remoteChanges(root, base, remoteHead, cache), cache);
      const plan = planMerge(entries, { localIds: (await planCommit(root, cache)).localIds, remoteCommit: remoteHead, now: now(), machine: machinePrefix(root) });
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
            (plan.conflicts.length ? `\n\nConflicts (the other versions are in conflicts/):\n${plan.conflicts.map((c) => `  ${c.path}`).join('\n')}` : ''),
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
    if (attempt >= MAX_PUSH_ATTEMPTS) throw new SvcError('storage', `the remote kept moving while svc pushed (${MAX_PUSH_ATTEMPTS} attempts): run svc sync again`);
  }

  report.head = await resolveRef(root, 'HEAD');
  report.open_conflicts = readConflicts(root).conflicts.map(({ id, path, engram_id, fields, detected_on, detected_at }) => ({ id, path, engram_id, fields, detected_on, detected_at }));
  writeState(root, {
    last_sync: now().toISOString(),
    remote: redactUrl(url),
    last_result:
      `${report.merge}; pushed: ${report.pushed}; ${report.pulled.files} file(s) pulled` + (report.open_conflicts.length ? `; ${report.open_conflicts.length} open conflict(s)` : ''),
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
export async function syncStores(root: string, opts: { remote?: string; now?: () => Date; gitOptional?: boolean } = {}): Promise<SyncAllReport> {
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
      if (others.length === 0 && !opts.gitOptional) throw invalid(`no remote is set for the store at ${primary.root}: run svc sync <address> once (an http:// or https:// git remote)`);
      if (others.length > 0) warnings.push(`the store at ${primary.root} has no remote (svc sync <address> sets one); syncing the registered stores only`);
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

/** One line per thing the user should know about a store's sync. */
export function describeSync(r: SyncReport): string[] {
  const lines: string[] = [];
  const remote = r.remote ?? 'its remote';
  lines.push(`Synced ${r.root} with ${remote} (branch ${r.branch})${r.remote_set === 'added' ? ': remote set' : r.remote_set === 'changed' ? ': remote changed' : ''}`);
  if (r.committed) lines.push(`  committed ${r.committed_files} changed file(s)`);
  if (r.local_only) lines.push(`  ${r.local_only} engram(s) of scope local stayed on this machine`);
  const merge: Record<SyncReport['merge'], string> = {
    'remote-empty': 'the remote was empty',
    'up-to-date': 'already up to date with the remote',
    ahead: 'nothing new on the remote',
    'fast-forward': 'fast-forwarded to the remote',
    merged: 'merged with the remote',
  };
  const pulled = r.pulled.files ? `: pulled ${r.pulled.files} file(s), ${r.pulled.engrams} engram(s)${r.pulled.removed ? `, ${r.pulled.removed} removed` : ''}` : '';
  lines.push(`  ${merge[r.merge]}${pulled}`);
  if (r.merged_logs.length) lines.push(`  merged logs (lines from both machines kept): ${r.merged_logs.join(', ')}`);
  if (r.merged_engrams.length) lines.push(`  merged engrams changed on both machines (counters added, lists united): ${r.merged_engrams.join(', ')}`);
  if (r.open_conflicts.length) lines.push(`  ${r.open_conflicts.length} sync conflict(s) wait for a decision: svc conflicts`);
  lines.push(r.pushed ? '  pushed' : '  nothing to push');
  for (const s of r.skipped) lines.push(`  not committed (cannot read its scope): ${s}`);
  return lines;
}

/** The conflict lines, for stderr: what this sync found. */
export function describeConflicts(r: SyncReport): string[] {
  return r.conflicts.map((c) => `sync conflict: ${c.engram_id ? `engram ${c.engram_id}` : c.path}: ${c.resolution}`);
}
