import { makeOutput, openStore, parseArgs } from '../../engine/cli/cli-kit.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { remoteOf } from '../../engine/remote/hub-client.js';

const HELP = `
  Usage
    svc status

  Engram, episode and pack counts, injection events, the storage root and index health; in a
  project that names a hub, the hub: its address, who the token is, whether it answers (1.5 s)
  and the team writes waiting in the outbox.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {});
  const out = makeOutput(cli.flags);
  const store = await openStore(cli.flags, 'full', out);
  try {
    const stats = await store.stats();
    const quarantined = store.quarantined();
    const { readConflicts } = await import('../../engine/store/sync-conflicts.js');
    const conflicts = readConflicts(store.root).conflicts.map(({ id, path, engram_id, fields }) => ({ id, path, engram_id, fields }));
    // Probe the model for real (no download): a broken model must show here, not only in recall.
    const [{ loadEmbedder }, { selectedModel }, { vectorsOffLine }] = await Promise.all([
      import('../../engine/embed/fastembed-embedder.js'),
      import('../../engine/embed/model-layout.js'),
      import('../../engine/embed/vectors-off.js'),
    ]);
    const model = selectedModel();
    const dense = await loadEmbedder(store.root, { download: false, progress: false });
    const vectors = store.vectorStats(model);
    // The project's hub, as svc doctor checks it (a project without one reads .svc.yaml and nothing more).
    // A broken .svc.yaml is a warning here: status still reports the store.
    const remote = await loadProjectConfig(process.cwd()).then(remoteOf, (err: Error) => (out.warn(err.message), null));
    const hub = remote ? await (await import('../../engine/remote/remote-check.js')).hubStatus(store.root, remote) : undefined;
    const vector =
      dense.state === 'ready'
        ? { state: 'ready', model, vectors: vectors.vectors, pending: vectors.pending }
        : { state: 'unavailable', model, reason: dense.reason, vectors: vectors.vectors };
    const report = {
      storage_root: store.root,
      id_prefix: store.idPrefix(),
      ...stats,
      search: { bm25: 'ready', vector },
      quarantined,
      sync_conflicts: conflicts,
      ...(hub ? { hub } : {}),
    };
    out.result(report, () => {
      const statuses = Object.entries(stats.by_status)
        .map(([k, v]) => `${v} ${k}`)
        .join(', ');
      const lines = [
        `Storage root      ${store.root}`,
        `Engrams           ${stats.engrams}${statuses ? ` (${statuses})` : ''}`,
        `Episodes          ${stats.episodes}`,
        `Sessions          ${stats.sessions}`,
        `Packs             ${stats.packs}`,
        `Injection events  ${stats.injection_events}`,
        dense.state === 'ready'
          ? `Search            hybrid: BM25 + ${model} (${vectors.vectors} vectors, ${vectors.pending} waiting)`
          : `Search            ${vectorsOffLine(dense.reason, Infinity)}`,
        `Id prefix         ${report.id_prefix}`,
      ];
      if (hub) {
        const state = hub.identity
          ? `reachable, as ${hub.identity}`
          : hub.reachable
            ? `reachable, but ${hub.error}`
            : `unreachable (${hub.error})`;
        const waits = [
          hub.queued ? `${hub.queued} queued write(s) waiting: svc sync sends them` : 'no queued writes',
          hub.refused ? `${hub.refused} refused (svc doctor)` : '',
        ]
          .filter(Boolean)
          .join(', ');
        lines.push(`Hub               ${hub.url}: ${state}; ${waits}`);
      }
      if (conflicts.length) lines.push(`Sync conflicts    ${conflicts.length} waiting for a decision: svc conflicts`);
      if (quarantined.length) {
        lines.push(`Quarantined       ${quarantined.length} file(s), kept for you to repair:`);
        for (const q of quarantined) lines.push(`  ${q.file}: ${q.reason}`);
      }
      return lines.join('\n');
    });
    return 0;
  } finally {
    store.close();
  }
}
