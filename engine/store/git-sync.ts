import * as fs from 'node:fs';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { LocalStore } from './local-store.js';
import { SvcError, invalid } from '../errors.js';
import { fsyncDir, TEMP_PREFIX, writeFileDurable } from './durable-write.js';

// Git-based sync of a local store with a remote over HTTP(S), through isomorphic-git.
//
//   svc sync <url>   sets the remote (first time: origin; a different address replaces it),
//                    then syncs; bare `svc sync` syncs with the remote already set.
//   a sync =  commit local changes  ->  fetch  ->  merge  ->  push  (retried when the push
//             races another machine's push).
//
// What is committed: everything the store's .gitignore does not exclude (engram YAML,
// episodes and events logs, sessions, config, packs ...), EXCEPT
//   - engrams of scope `local`: their files are never staged (an engram that turns local is
//     removed from the tree, its file stays on disk and keeps being served); they stay
//     "untracked" in git's eyes. A YAML file that cannot be parsed is not committed either
//     (its scope is unknown) and is reported;
//   - lines of the events logs that name a local engram (they would leak its id and history):
//     the committed blob of an events log is the filtered file, the file on disk keeps all.
// The merge is svc's own, three-way and file by file (never a text merge of YAML):
//   - a file changed on one side only takes that side;
//   - JSONL logs (episodes/, events/) changed on both sides are merged as the union of their
//     lines: the file on disk keeps its lines and gets the remote lines it lacks appended
//     (the index reads logs incrementally, so a log only ever grows), and the committed blob
//     is the same set of lines sorted by time, identical on every machine. Appends made on
//     two machines never get lost;
//   - an engram changed on both sides is merged field by field when the two sides changed
//     different top-level fields; when they changed the same field differently it is a
//     conflict: the local version stays in engrams/, the remote version is written to
//     quarantine/ (gitignored; `svc status` lists it with the reason) and reported;
//   - any other file changed on both sides: same conflict handling.
//   The machine that syncs second sees the conflict and keeps its version, which it pushes;
//   the first machine adopts it at its next sync (its own version is in the other machine's
//   quarantine/ and in git history). A log deleted remotely is kept.
// Machine-local and derived files (local.yaml with the id prefix and the store registry,
// index.db*, models/, quarantine/, backups/, bin/, temp files) are never committed and never
// taken from a remote, even when the .gitignore is missing.
// Nothing ever writes conflict markers. After a pull the caller reconciles the index (new and
// changed files are picked up): see `reconcileAfterSync`.

type Git = typeof import('isomorphic-git');
type Http = typeof import('isomorphic-git/http/node');

const REMOTE = 'origin';
const STATE_FILE = 'svc-sync.json';
const LOG_PATH = /^(episodes|events)\/[^/]+\.jsonl$/;
const EVENTS_PATH = /^events\/[^/]+\.jsonl$/;
const ENGRAM_PATH = /^engrams\/([^/]+)\.yaml$/;
const MAX_PUSH_ATTEMPTS = 3;
/** Derived or machine-local files (the store's .gitignore lists them too). */
const MACHINE_LOCAL = /^(index\.db|local\.yaml$|models\/|quarantine\/|backups\/|bin\/)|(^|\/)\.tmp-/;

let loaded: Promise<{ git: Git['default']; http: Http['default'] }> | undefined;
function loadGit(): Promise<{ git: Git['default']; http: Http['default'] }> {
  return (loaded ??= Promise.all([import('isomorphic-git'), import('isomorphic-git/http/node')]).then(([g, h]) => ({ git: g.default, http: h.default })));
}

export interface SyncOptions {
  /** A remote address to set before syncing (http or https). */
  remote?: string;
  /** Push after the merge (default true). */
  push?: boolean;
  /** Commit local changes first (default true); false for stores svc must not write (read-only). */
  commit?: boolean;
  now?: () => Date;
}

export interface SyncConflict {
  /** Path in the store, e.g. engrams/ENG-KQ7M-2026-1122-001.yaml */
  path: string;
  engram_id?: string;
  kind: 'edited-on-both' | 'added-on-both' | 'deleted-remotely' | 'deleted-locally';
  /** What svc did, in a sentence. */
  resolution: string;
  /** The file in engrams/ (or elsewhere in the store) holding the kept version. */
  kept: string | null;
  /** Where the other version was written (quarantine/), when there was one to keep. */
  remote_copy?: string;
  /** For engrams: the top-level fields both sides changed. */
  fields?: string[];
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
  /** Engrams merged field by field (both sides changed different fields). */
  merged_engrams: string[];
  conflicts: SyncConflict[];
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
  /** Queued writes to remote team scopes: none are queued by git sync. */
  outbox: number;
}

interface SyncState {
  last_sync?: string;
  last_result?: string;
  remote?: string;
}

// ------------------------------------------------------------------------------ remote

/** Hides credentials in an address before it is shown. */
export function redactUrl(url: string): string {
  return url.replace(/^(https?:\/\/)[^@/]*@/i, '$1***@');
}

function checkRemoteUrl(url: string): void {
  if (!/^https?:\/\/[^\s]+$/i.test(url)) {
    throw invalid(`svc sync talks to git servers over HTTP(S): "${redactUrl(url)}" is not an http:// or https:// address`);
  }
}

export async function getRemote(root: string): Promise<string | null> {
  if (!existsSync(join(root, '.git'))) return null;
  const { git } = await loadGit();
  const remotes = await git.listRemotes({ fs, dir: root });
  return remotes.find((r) => r.remote === REMOTE)?.url ?? null;
}

/** Sets origin to `url`; returns what changed. */
export async function setRemote(root: string, url: string): Promise<'added' | 'changed' | 'unchanged'> {
  checkRemoteUrl(url);
  const { git } = await loadGit();
  const current = await getRemote(root);
  if (current === url) return 'unchanged';
  await git.addRemote({ fs, dir: root, remote: REMOTE, url, force: true });
  return current === null ? 'added' : 'changed';
}

// ------------------------------------------------------------------------------ status

function readState(root: string): SyncState {
  const path = join(root, '.git', STATE_FILE);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as SyncState;
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

async function resolve(root: string, ref: string): Promise<string | null> {
  const { git } = await loadGit();
  try {
    return await git.resolveRef({ fs, dir: root, ref });
  } catch {
    return null;
  }
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
  const branch = existsSync(join(root, '.git')) ? await branchOf(root) : 'main';
  const head = existsSync(join(root, '.git')) ? await resolve(root, 'HEAD') : null;
  const remoteHead = await resolve(root, `refs/remotes/${REMOTE}/${branch}`);
  const mine = await ancestors(root, head, cache);
  const theirs = await ancestors(root, remoteHead, cache);
  const plan = existsSync(join(root, '.git')) ? await planCommit(root, cache) : null;
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
async function scopeOfFile(path: string): Promise<string | undefined> {
  try {
    const { parse } = await import('yaml');
    const value = parse(readFileSync(path, 'utf8')) as { scope?: unknown } | null;
    return typeof value?.scope === 'string' ? value.scope : undefined;
  } catch {
    return undefined;
  }
}

/** Drops the events lines that name a local engram. */
function filterEvents(text: string, localIds: Set<string>): string {
  if (localIds.size === 0) return text;
  return text
    .split('\n')
    .filter((line) => {
      if (line.trim() === '') return true;
      try {
        const ev = JSON.parse(line) as { engram_id?: string; engram_ids?: string[] };
        if (ev.engram_id && localIds.has(ev.engram_id)) return false;
        if (ev.engram_ids?.some((id) => localIds.has(id))) return false;
        return true;
      } catch {
        return true;
      }
    })
    .join('\n');
}

/**
 * The blob committed for a log: its lines sorted by time (then text), and for events without
 * the lines about local engrams. The file on disk only ever grows by appends (the index reads
 * logs incrementally), so two machines hold the same lines in different orders; the sorted
 * blob is the same on both, so their trees agree and a sync does not merge forever.
 */
function committedLog(path: string, text: string, localIds: Set<string>): string {
  const kept = EVENTS_PATH.test(path) ? filterEvents(text, localIds) : text;
  const keyed = lines(kept).map((line) => {
    let at = '';
    try {
      const v = (JSON.parse(line) as { at?: unknown }).at;
      if (typeof v === 'string') at = v;
    } catch {
      /* an unreadable line sorts first, kept as it is */
    }
    return { at, line };
  });
  keyed.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.line < b.line ? -1 : a.line > b.line ? 1 : 0));
  return keyed.length ? keyed.map((k) => k.line).join('\n') + '\n' : '';
}

/** What committing the working tree would stage, without staging anything. */
async function planCommit(root: string, cache: object): Promise<CommitPlan> {
  const { git } = await loadGit();
  const matrix = await git.statusMatrix({ fs, dir: root, cache });
  const headOid = await resolve(root, 'HEAD');
  const localIds = new Set<string>();
  const localPaths = new Set<string>();
  const skipped: string[] = [];
  // Pass 1: which engram files are local (or unreadable), so their lines and files stay home.
  for (const [path, head, work] of matrix) {
    const m = ENGRAM_PATH.exec(path);
    if (!m || work === 0 || (head === 1 && work === 1)) continue;
    const scope = await scopeOfFile(join(root, path));
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
    if (MACHINE_LOCAL.test(path)) {
      // Never committed, even when a store lacks its .gitignore (an old or hand-made store).
      if (head === 1) changes.push({ path, action: 'remove' });
      else if (stage !== 0) fixes.push({ path, action: 'remove' });
      continue;
    }
    if (localPaths.has(path)) {
      if (!skipped.includes(path)) localOnly += 1;
      if (head === 1) changes.push({ path, action: 'remove' });
      else if (stage !== 0) fixes.push({ path, action: 'remove' });
      continue;
    }
    if (work === 0) {
      if (head === 1) changes.push({ path, action: 'remove' });
      else if (stage !== 0) fixes.push({ path, action: 'remove' });
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

async function stage(root: string, change: Change, cache: object): Promise<void> {
  const { git } = await loadGit();
  if (change.action === 'remove') {
    await git.remove({ fs, dir: root, filepath: change.path, cache });
  } else if (change.action === 'add') {
    await git.add({ fs, dir: root, filepath: change.path, cache });
  } else {
    const oid = await git.writeBlob({ fs, dir: root, blob: Buffer.from(change.blob ?? '', 'utf8') });
    await git.updateIndex({ fs, dir: root, filepath: change.path, oid, add: true, cache });
  }
}

async function author(root: string, now: Date): Promise<{ name: string; email: string; timestamp: number; timezoneOffset: number }> {
  const { git } = await loadGit();
  const name = (await git.getConfig({ fs, dir: root, path: 'user.name' })) as string | undefined;
  const email = (await git.getConfig({ fs, dir: root, path: 'user.email' })) as string | undefined;
  let prefix = 'svc';
  try {
    prefix = /^id_prefix:\s*(\S+)/m.exec(readFileSync(join(root, 'local.yaml'), 'utf8'))?.[1] ?? 'svc';
  } catch {
    /* no local.yaml */
  }
  return {
    name: name ?? `svc (${prefix})`,
    email: email ?? `svc+${prefix.toLowerCase()}@localhost`,
    timestamp: Math.floor(now.getTime() / 1000),
    timezoneOffset: 0,
  };
}

/** Commits the store's changes (see the header for what is left out). Returns the commit, or null. */
async function commitLocal(root: string, now: Date, cache: object): Promise<{ oid: string | null; files: number; plan: CommitPlan }> {
  const { git } = await loadGit();
  const plan = await planCommit(root, cache);
  for (const c of [...plan.fixes, ...plan.changes]) await stage(root, c, cache);
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

async function blobBytes(root: string, oid: string, cache: object): Promise<Buffer> {
  const { git } = await loadGit();
  const { blob } = await git.readBlob({ fs, dir: root, oid, cache });
  return Buffer.from(blob);
}

async function blobText(root: string, oid: string, cache: object): Promise<string> {
  return utf8(await blobBytes(root, oid, cache));
}

/** File content: text for logs and engrams, bytes for anything else (packs may hold any file). */
type Bytes = string | Buffer;
const bytes = (d: Bytes): Buffer => (typeof d === 'string' ? Buffer.from(d, 'utf8') : d);
const utf8 = (d: Bytes): string => (typeof d === 'string' ? d : d.toString('utf8'));

async function oidOf(data: Bytes): Promise<string> {
  const { git } = await loadGit();
  return (await git.hashBlob({ object: bytes(data) })).oid;
}

/** A durable write of bytes (temp file, fsync, rename, fsync of the folder). */
function writeBytesDurable(target: string, data: Bytes): void {
  if (typeof data === 'string') return writeFileDurable(target, data);
  const tmp = join(dirname(target), `${TEMP_PREFIX}${basename(target)}-${process.pid}-${randomBytes(4).toString('hex')}`);
  const fd = openSync(tmp, 'wx', 0o644);
  try {
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dirname(target));
}

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '');
}

function unionLines(local: string, remote: string): string {
  const mine = lines(local);
  const seen = new Set(mine);
  const extra = lines(remote).filter((l) => !seen.has(l) && (seen.add(l), true));
  const all = [...mine, ...extra];
  return all.length ? all.join('\n') + '\n' : '';
}

type EngramYaml = typeof import('./engram-yaml.js');

/** Field-by-field three-way merge of an engram; null (with the clashing fields) when both changed one field differently. */
function mergeEngram(
  yaml: EngramYaml,
  baseText: string | null,
  localText: string,
  remoteText: string,
): { text: string } | { clash: string[] } {
  const parse = (t: string): Record<string, unknown> | null => {
    const r = yaml.parseEngramYaml(t);
    return r.ok ? (r.engram as unknown as Record<string, unknown>) : null;
  };
  const local = parse(localText);
  const remote = parse(remoteText);
  const base = baseText === null ? null : parse(baseText);
  if (!local || !remote || !base) return { clash: ['(whole file)'] };
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  const merged: Record<string, unknown> = {};
  const clash: string[] = [];
  const keys = [...new Set([...Object.keys(local), ...Object.keys(remote), ...Object.keys(base)])];
  for (const k of keys) {
    const [b, l, r] = [base[k], local[k], remote[k]];
    let v: unknown;
    if (same(l, r)) v = l;
    else if (same(l, b)) v = r;
    else if (same(r, b)) v = l;
    else {
      clash.push(k);
      continue;
    }
    if (v !== undefined) merged[k] = v;
  }
  if (clash.length) return { clash };
  // Keep the local key order, then keys only the remote has.
  const ordered: Record<string, unknown> = {};
  for (const k of [...Object.keys(local), ...Object.keys(remote)]) if (k in merged && !(k in ordered)) ordered[k] = merged[k];
  const text = yaml.stringifyEngram(ordered as never);
  return parse(text) ? { text } : { clash: ['(merged result is not a valid engram)'] };
}

interface MergeOutcome {
  pulled: SyncReport['pulled'];
  merged_logs: string[];
  merged_engrams: string[];
  conflicts: SyncConflict[];
  /** Every path now holds exactly the remote blob (a fast-forward is possible). */
  tookRemote: boolean;
}

function stamp(now: Date): string {
  return now.toISOString().replace(/[:.]/g, '-');
}

/** Applies the remote side of a three-way merge to the working tree and the index. */
async function applyRemote(
  root: string,
  changes: TreeChange[],
  remoteCommit: string,
  localIds: Set<string>,
  now: Date,
  cache: object,
): Promise<MergeOutcome> {
  const { git } = await loadGit();
  const out: MergeOutcome = { pulled: { files: 0, engrams: 0, removed: 0 }, merged_logs: [], merged_engrams: [], conflicts: [], tookRemote: true };
  let yaml: EngramYaml | undefined;

  const write = (path: string, data: Bytes): void => {
    const abs = join(root, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeBytesDurable(abs, data);
  };
  const stageFile = async (path: string, data: Bytes): Promise<void> => {
    const m = ENGRAM_PATH.exec(path);
    if (m && (localIds.has(m[1]!) || (await scopeOfFile(join(root, path))) === 'local')) {
      // A local engram stays out of the tree, even in a merge.
      try {
        await git.remove({ fs, dir: root, filepath: path, cache });
      } catch {
        /* not in the index */
      }
      return;
    }
    const blob = LOG_PATH.test(path) ? Buffer.from(committedLog(path, utf8(data), localIds), 'utf8') : bytes(data);
    const oid = await git.writeBlob({ fs, dir: root, blob });
    await git.updateIndex({ fs, dir: root, filepath: path, oid, add: true, cache });
  };
  const unstage = async (path: string): Promise<void> => {
    try {
      await git.remove({ fs, dir: root, filepath: path, cache });
    } catch {
      /* not in the index */
    }
  };
  const quarantineRemote = (path: string, data: Bytes, reason: string): string => {
    const dir = join(root, 'quarantine');
    mkdirSync(dir, { recursive: true });
    const dest = join(dir, `${basename(path)}.sync-conflict-${stamp(now)}`);
    writeBytesDurable(dest, data);
    writeFileDurable(`${dest}.reason.txt`, `${reason}\n`);
    return dest;
  };
  const countPulled = (path: string, removed = false): void => {
    out.pulled.files += 1;
    if (ENGRAM_PATH.test(path)) out.pulled.engrams += 1;
    if (removed) out.pulled.removed += 1;
  };

  for (const c of changes) {
    if (MACHINE_LOCAL.test(c.path)) {
      // Another machine's local.yaml (its id prefix!), index or models: never taken.
      out.tookRemote = false;
      continue;
    }
    const abs = join(root, c.path);
    const working = existsSync(abs) ? readFileSync(abs) : null;
    const remoteText = c.remote ? await blobBytes(root, c.remote, cache) : null;
    const engramId = ENGRAM_PATH.exec(c.path)?.[1];

    if (LOG_PATH.test(c.path)) {
      if (remoteText === null) {
        out.tookRemote = false; // deleted remotely: an append-only log is kept
        continue;
      }
      const mine = working === null ? '' : utf8(working);
      const merged = unionLines(mine, utf8(remoteText));
      if (merged !== mine) write(c.path, merged);
      const localLines = new Set(lines(mine));
      const remoteLines = new Set(lines(utf8(remoteText)));
      const remoteAdded = [...remoteLines].some((l) => !localLines.has(l));
      const localAdded = [...localLines].some((l) => !remoteLines.has(l));
      if (remoteAdded && localAdded) out.merged_logs.push(c.path);
      else if (remoteAdded) countPulled(c.path);
      await stageFile(c.path, merged);
      const stagedOid = await oidOf(committedLog(c.path, merged, localIds));
      if (stagedOid !== c.remote) out.tookRemote = false;
      continue;
    }

    const wOid = working === null ? null : await oidOf(working);
    if (wOid === c.remote) {
      // Already the same here.
      if (remoteText === null) await unstage(c.path);
      else await stageFile(c.path, remoteText);
      continue;
    }
    if (wOid === c.base) {
      // Unchanged here: take the remote side.
      if (remoteText === null) {
        if (existsSync(abs)) unlinkSync(abs);
        await unstage(c.path);
        countPulled(c.path, true);
      } else {
        write(c.path, remoteText);
        await stageFile(c.path, remoteText);
        countPulled(c.path);
      }
      continue;
    }

    // Changed on both sides.
    const short = remoteCommit.slice(0, 7);
    if (remoteText === null) {
      out.tookRemote = false;
      await stageFile(c.path, working!);
      out.conflicts.push({
        path: c.path,
        ...(engramId ? { engram_id: engramId } : {}),
        kind: 'deleted-remotely',
        resolution: 'deleted on another machine, changed here: kept the local version',
        kept: abs,
      });
      continue;
    }
    if (working === null) {
      write(c.path, remoteText);
      await stageFile(c.path, remoteText);
      countPulled(c.path);
      out.conflicts.push({
        path: c.path,
        ...(engramId ? { engram_id: engramId } : {}),
        kind: 'deleted-locally',
        resolution: 'deleted here, changed on another machine: restored the remote version',
        kept: abs,
      });
      continue;
    }
    let clash: string[] | undefined;
    if (engramId && c.base) {
      yaml ??= await import('./engram-yaml.js');
      const baseText = await blobText(root, c.base, cache);
      const merged = mergeEngram(yaml, baseText, utf8(working), utf8(remoteText));
      if ('text' in merged) {
        write(c.path, merged.text);
        await stageFile(c.path, merged.text);
        out.merged_engrams.push(engramId);
        out.tookRemote = false;
        continue;
      }
      clash = merged.clash;
    }
    out.tookRemote = false;
    const what = engramId ? `engram ${engramId}` : c.path;
    const reason =
      `sync conflict: ${what} was ${c.base ? 'changed' : 'added'} both here and on another machine` +
      (clash ? ` (fields: ${clash.join(', ')})` : '') +
      `; this file is the remote version (commit ${short}); the local version stays in ${abs}. ` +
      `To keep this one instead, copy it over that file.`;
    const copy = quarantineRemote(c.path, remoteText, reason);
    await stageFile(c.path, working);
    out.conflicts.push({
      path: c.path,
      ...(engramId ? { engram_id: engramId } : {}),
      kind: c.base ? 'edited-on-both' : 'added-on-both',
      resolution: `kept the local version; the remote version is in ${copy}`,
      kept: abs,
      remote_copy: copy,
      ...(clash ? { fields: clash } : {}),
    });
  }
  return out;
}

// ------------------------------------------------------------------------------ sync

function networkError(action: string, url: string, err: unknown): SvcError {
  const e = err as { code?: string; message?: string; data?: { statusCode?: number; statusMessage?: string } };
  if (e.code === 'GitPushError') return new SvcError('storage', `cannot ${action} ${redactUrl(url)}: ${(e.message ?? '').trim().replace(/\s*\n\s*/g, '; ')}`);
  const detail = e.data?.statusCode ? `HTTP ${e.data.statusCode} ${e.data.statusMessage ?? ''}`.trim() : (e.message ?? String(err)).split('\n')[0];
  return new SvcError('storage', `cannot ${action} ${redactUrl(url)}: ${detail}`);
}

/**
 * Syncs `store` with its remote: commit, fetch, merge, push. Holds the store's write lock
 * while it commits and merges (never while on the network). The caller reconciles the index
 * afterwards (`reconcileAfterSync`).
 */
export async function syncStore(store: LocalStore, opts: SyncOptions = {}): Promise<SyncReport> {
  const root = store.root;
  const now = opts.now ?? (() => new Date());
  const { git, http } = await loadGit();
  const cache = {};
  const locked = <T>(fn: () => Promise<T>): Promise<T> => store.write(async () => fn());

  const remoteSet = opts.remote !== undefined ? await locked(() => setRemote(root, opts.remote!)) : null;
  const url = await getRemote(root);
  if (!url) throw invalid(`the store at ${root} has no remote: run svc sync <address> once to set it`);
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
    let fetched: { fetchHead: string | null };
    try {
      fetched = await git.fetch({ fs, http, dir: root, remote: REMOTE, ref: branch, singleBranch: true, tags: false, cache });
    } catch (err) {
      throw networkError('fetch from', url, err);
    }
    const remoteHead = fetched.fetchHead ?? null;

    await locked(async () => {
      await commitStep(); // whatever was written while we were on the network
      const local = await resolve(root, 'HEAD');
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
      const changes = await remoteChanges(root, base, remoteHead, cache);
      const localIds = (await planCommit(root, cache)).localIds;
      const outcome = await applyRemote(root, changes, remoteHead, localIds, now(), cache);
      report.pulled.files += outcome.pulled.files;
      report.pulled.engrams += outcome.pulled.engrams;
      report.pulled.removed += outcome.pulled.removed;
      report.merged_logs.push(...outcome.merged_logs);
      report.merged_engrams.push(...outcome.merged_engrams);
      report.conflicts.push(...outcome.conflicts);
      if (local === null || (base === local && outcome.tookRemote)) {
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
            (outcome.conflicts.length ? `\n\nConflicts (local version kept):\n${outcome.conflicts.map((c) => `  ${c.path}`).join('\n')}` : ''),
        });
        report.merge = 'merged';
      }
    });

    if (!doPush) break;
    const head = await resolve(root, 'HEAD');
    if (!head || head === remoteHead) break;
    try {
      const pushed = await git.push({ fs, http, dir: root, remote: REMOTE, ref: branch, cache });
      if (!pushed.ok) {
        const why = Object.values(pushed.refs ?? {})
          .map((r) => r.error)
          .filter(Boolean)
          .join('; ');
        if (attempt < MAX_PUSH_ATTEMPTS) continue;
        throw new SvcError('storage', `the remote refused the push: ${pushed.error ?? why ?? 'unknown reason'}`);
      }
      report.pushed = true;
      break;
    } catch (err) {
      const code = (err as { code?: string }).code;
      // Someone pushed first (caught here, or refused by the server): fetch, merge, push again.
      if ((code === 'PushRejectedError' || code === 'GitPushError') && attempt < MAX_PUSH_ATTEMPTS) continue;
      if (err instanceof SvcError) throw err;
      throw networkError('push to', url, err);
    }
  }

  report.head = await resolve(root, 'HEAD');
  writeState(root, {
    last_sync: now().toISOString(),
    remote: redactUrl(url),
    last_result:
      `${report.merge}; pushed: ${report.pushed}; ${report.pulled.files} file(s) pulled` + (report.conflicts.length ? `; ${report.conflicts.length} conflict(s)` : ''),
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
export async function syncStores(root: string, opts: { remote?: string; now?: () => Date } = {}): Promise<SyncAllReport> {
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
      if (others.length === 0) throw invalid(`no remote is set for the store at ${primary.root}: run svc sync <address> once (an http:// or https:// git remote)`);
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
  if (r.merged_engrams.length) lines.push(`  merged engrams changed on both machines in different fields: ${r.merged_engrams.join(', ')}`);
  lines.push(r.pushed ? '  pushed' : '  nothing to push');
  for (const s of r.skipped) lines.push(`  not committed (cannot read its scope): ${s}`);
  return lines;
}

/** The conflict lines, for stderr. */
export function describeConflicts(r: SyncReport): string[] {
  return r.conflicts.map((c) => `sync conflict: ${c.engram_id ? `engram ${c.engram_id}` : c.path}: ${c.resolution}`);
}
