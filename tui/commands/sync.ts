import { sendQueued } from '../team-memory.js';
import { remoteOf } from '../../engine/remote/hub-client.js';
import { SvcError, invalid } from '../../engine/errors.js';
import { makeOutput, openStore, parseArgs, type Output } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { terminalSafe } from '../../engine/text.js';
import { embedderFor } from '../embedding.js';

const HELP = `
  Usage
    svc sync [remote]
    svc sync --full
    svc sync --status

  Git-based sync between machines: https:// remotes directly, SSH remotes (git@host:repo.git,
  ssh://...) and local paths through the git command.
    svc sync <remote>   sets the remote (first time; a new address replaces the old one),
                        then pulls and pushes
    svc sync            commits this store's changes, pulls (merging what other machines
                        pushed) and pushes; registered stores with a git remote of their own
                        are synced too (read-only ones are only pulled)
    svc sync --full     drops the derived index and rebuilds it from the YAML files, then
                        embeds every engram when the model is available (no network)
    svc sync --status   the remote, commits ahead and behind, last sync, uncommitted changes

  Engrams of scope local never leave the machine (they are never committed); private
  engrams are pushed. Nothing either machine wrote is lost: logs (episodes, events) keep the
  lines of both; an engram changed on both merges field by field, counters (feedback, usage,
  reference counts) adding up; a field both changed differently (the statement, say) keeps one
  value, and the other waits in a conflict record that syncs to every machine: svc conflicts
  lists and resolves them.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { full: { type: 'boolean', default: false }, status: { type: 'boolean', default: false } });
  const out = makeOutput(cli.flags);
  if (cli.input.length > 1) throw invalid('usage: svc sync [remote] [--full]');
  const remote = cli.input[0];
  const root = resolveStoreRoot(cli.flags.path);

  if (cli.flags.status) {
    if (remote !== undefined || cli.flags.full) throw invalid('--status takes no remote and no --full');
    const { syncStatus } = await import('../../engine/store/git-sync-state.js');
    const s = await syncStatus(root);
    out.result(s, () =>
      [
        `Store        ${s.root}`,
        `Remote       ${s.remote ?? 'none (svc sync <address> sets one)'}`,
        `Branch       ${s.branch}${s.head ? ` at ${s.head.slice(0, 7)}` : ' (no commits yet)'}`,
        `Ahead        ${s.ahead} commit(s)`,
        `Behind       ${s.behind} commit(s) (as of the last fetch)`,
        `Last sync    ${s.last_sync ?? 'never'}${s.last_result ? ` (${s.last_result})` : ''}`,
        `Uncommitted  ${s.uncommitted.engrams} engram file(s), ${s.uncommitted.other} other file(s)`,
        `Local only   ${s.local_only} engram(s) of scope local (never pushed)`,
        `Conflicts    ${s.conflicts}${s.conflicts ? ' (svc conflicts)' : ''}`,
      ].join('\n'),
    );
    return 0;
  }

  const { loadProjectConfig } = await import('../../engine/config/project-config.js');
  const project = await loadProjectConfig(process.cwd());
  const outbox = await sendQueued(root, project, out);

  let synced: Record<string, unknown> | undefined;
  if (remote !== undefined || !cli.flags.full) {
    const { syncStores } = await import('../../engine/store/git-sync.js');
    const { describeSync, describeConflicts } = await import('../../engine/store/git-sync-text.js');
    // A project whose hub is its only remote: sending the queue is the whole sync.
    const all = await syncStores(root, { remote, gitOptional: remoteOf(project) !== null });
    for (const w of all.warnings) out.warn(w);
    const text: string[] = [];
    if (outbox) text.push(outbox.line);
    else if (remoteOf(project)) text.push('Nothing waited in the outbox for the hub.');
    if (!all.primary && all.stores.length === 0)
      text.push('No git remote is set for this store (svc sync <address> sets one): nothing else to sync.');
    let conflicts = 0;
    if (all.primary) {
      text.push(...describeSync(all.primary));
      for (const c of describeConflicts(all.primary)) out.warn(c);
      conflicts += all.primary.conflicts.length;
    }
    for (const s of all.stores) {
      if (s.report) {
        text.push(
          ...describeSync(s.report).map((l, i) => (i === 0 ? `${l} [scope ${s.scope}${s.readonly ? ', read-only: pulled only' : ''}]` : l)),
        );
        for (const c of describeConflicts(s.report)) out.warn(c);
        conflicts += s.report.conflicts.length;
      } else if (s.skipped && !cli.flags.quiet) {
        text.push(`Not synced: ${s.path} [scope ${s.scope}]: ${s.skipped}`);
      }
    }
    synced = {
      ...(all.primary ?? { root, remote: null }),
      stores: all.stores,
      conflict_count: conflicts,
      ...(outbox ? { outbox: outbox.report } : {}),
    };
    if (!cli.flags.full) {
      const counts = await countAfter(cli.flags, out);
      out.result({ ...synced, engrams: counts }, () => [...text, `Engrams now: ${counts}`].join('\n'));
      return 0;
    }
    if (!out.json) process.stdout.write(terminalSafe(text.join('\n')) + '\n');
  }
  return rebuild(cli.flags, out, synced);
}

async function countAfter(flags: { path?: string }, out: Output): Promise<number> {
  const store = await openStore(flags, 'full', out);
  try {
    return (await store.stats()).engrams;
  } finally {
    store.close();
  }
}

/** --full: drop the derived index and rebuild it from the YAML files (of every registered store). */
async function rebuild(flags: { path?: string; fast?: boolean }, out: Output, synced?: Record<string, unknown>): Promise<number> {
  const store = await openStore(flags, 'fast', out);
  try {
    try {
      await store.rebuild();
    } catch (err) {
      out.warn(`the index rebuild failed: ${(err as Error).message}`);
      throw new SvcError('storage', `index rebuild failed; the YAML files are untouched: ${(err as Error).message}`);
    }
    for (const w of store.warnings.splice(0)) out.warn(w);
    const stats = await store.stats();
    const dense = await embedderFor(store, out, { fast: flags.fast ?? false, download: true, warn: true });
    const embedded = dense?.state === 'ready' ? await store.embedPending(dense.embedder) : 0;
    const vector =
      dense?.state === 'ready' ? `embedded ${embedded} engrams` : `vectors unavailable: ${dense?.reason ?? 'skipped (--fast)'}`;
    const result = {
      rebuilt: true,
      engrams: stats.engrams,
      episodes: stats.episodes,
      quarantined: store.quarantined().length,
      embedded,
      vector,
    };
    out.result(
      synced ? { ...synced, ...result } : result,
      () => `Rebuilt the index: ${stats.engrams} engrams, ${stats.episodes} episodes; ${vector}`,
    );
    return 0;
  } finally {
    store.close();
  }
}
