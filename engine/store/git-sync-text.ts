import type { SyncReport } from './git-sync.js';

// What a sync tells the user: the lines `svc sync` prints for each store's report.

/** One line per thing the user should know about a store's sync. */
export function describeSync(r: SyncReport): string[] {
  const lines: string[] = [];
  const remote = r.remote ?? 'its remote';
  lines.push(
    `Synced ${r.root} with ${remote} (branch ${r.branch})${r.remote_set === 'added' ? ': remote set' : r.remote_set === 'changed' ? ': remote changed' : ''}`,
  );
  if (r.committed) lines.push(`  committed ${r.committed_files} changed file(s)`);
  if (r.local_only) lines.push(`  ${r.local_only} engram(s) of scope local stayed on this machine`);
  const merge: Record<SyncReport['merge'], string> = {
    'remote-empty': 'the remote was empty',
    'up-to-date': 'already up to date with the remote',
    ahead: 'nothing new on the remote',
    'fast-forward': 'fast-forwarded to the remote',
    merged: 'merged with the remote',
  };
  const pulled = r.pulled.files
    ? `: pulled ${r.pulled.files} file(s), ${r.pulled.engrams} engram(s)${r.pulled.removed ? `, ${r.pulled.removed} removed` : ''}`
    : '';
  lines.push(`  ${merge[r.merge]}${pulled}`);
  if (r.merged_logs.length) lines.push(`  merged logs (lines from both machines kept): ${r.merged_logs.join(', ')}`);
  if (r.merged_engrams.length)
    lines.push(`  merged engrams changed on both machines (counters added, lists united): ${r.merged_engrams.join(', ')}`);
  if (r.open_conflicts.length) lines.push(`  ${r.open_conflicts.length} sync conflict(s) wait for a decision: svc conflicts`);
  lines.push(r.pushed ? '  pushed' : '  nothing to push');
  for (const s of r.skipped) lines.push(`  not committed (cannot read its scope): ${s}`);
  return lines;
}

/** The conflict lines, for stderr: what this sync found. */
export function describeConflicts(r: SyncReport): string[] {
  return r.conflicts.map((c) => `sync conflict: ${c.engram_id ? `engram ${c.engram_id}` : c.path}: ${c.resolution}`);
}
