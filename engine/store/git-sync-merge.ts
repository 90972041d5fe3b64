import * as fs from 'node:fs';
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fsyncDir, writeFilesDurable } from './durable-write.js';
import { LOG_PATH } from './sync-logs.js';
import type { MergeEntry, MergePlan } from './sync-merge.js';
import { loadGit } from './sync-transport.js';
import { stageAll, type Change } from './git-sync-plan.js';

// The git side of a sync's merge: which files the remote changed since the merge base (with
// their base, working and remote content, for the planner in sync-merge.ts) and applying the
// planned merge to the working tree and the index.

interface TreeChange {
  path: string;
  base: string | null;
  remote: string | null;
}

/** Files whose blob differs between `base` (null: empty tree) and `remote`; unchanged subtrees are skipped. */
export async function remoteChanges(root: string, base: string | null, remote: string, cache: object): Promise<TreeChange[]> {
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
export async function mergeEntries(root: string, changes: TreeChange[], cache: object): Promise<MergeEntry[]> {
  const out: MergeEntry[] = [];
  for (const c of changes) {
    const abs = join(root, c.path);
    out.push({
      path: c.path,
      base: await blob(root, c.base, cache),
      local: existsSync(abs) ? readFileSync(abs) : null,
      remote: await blob(root, c.remote, cache),
    });
  }
  return out;
}

/** Applies a merge plan: the working tree (durably, one folder fsync per folder), then the index in a batch. */
export async function applyPlan(root: string, plan: MergePlan, cache: object): Promise<void> {
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
      'remove' in e
        ? { path: e.path, action: 'remove' }
        : LOG_PATH.test(e.path)
          ? { path: e.path, action: 'blob', blob: e.data.toString('utf8') }
          : { path: e.path, action: 'add' },
    ),
    cache,
  );
}
