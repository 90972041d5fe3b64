import * as fs from 'node:fs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { committedLog, LOG_PATH } from './sync-logs.js';
import { ENGRAM_PATH, MACHINE_LOCAL, scopeOfText } from './sync-merge.js';
import { loadGit, resolveRef } from './sync-transport.js';

// The commit side of git sync: which working-tree changes a commit takes (engrams of scope
// local, unreadable engram files and machine-local files stay out; events logs are committed
// filtered), staging them in batches, and the commit itself with its author.

export interface Change {
  path: string;
  /** remove: drop from the index; add: stage the working file; blob: stage this content. */
  action: 'remove' | 'add' | 'blob';
  blob?: string;
}

export interface CommitPlan {
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
export async function planCommit(root: string, cache: object): Promise<CommitPlan> {
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
export async function stageAll(root: string, changes: Change[], cache: object): Promise<void> {
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

export async function author(root: string, now: Date): Promise<{ name: string; email: string; timestamp: number; timezoneOffset: number }> {
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
export function machinePrefix(root: string): string {
  try {
    return /^id_prefix:\s*(\S+)/m.exec(readFileSync(join(root, 'local.yaml'), 'utf8'))?.[1] ?? 'svc';
  } catch {
    return 'svc';
  }
}

/** Commits the store's changes (see the header for what is left out). Returns the commit, or null. */
export async function commitLocal(
  root: string,
  now: Date,
  cache: object,
): Promise<{ oid: string | null; files: number; plan: CommitPlan }> {
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
