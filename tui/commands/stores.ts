import { SvcError, invalid } from '../../engine/errors.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { remoteOf } from '../../engine/remote/hub-client.js';
import { addStore, listStores, removeStore, DISCOVER_NEEDS_HUB, type StoreRow } from '../../engine/store/store-admin.js';

const HELP = `
  Usage
    svc stores list
    svc stores add <path> <scope> [--shared] [--readonly]
    svc stores remove <path>
    svc stores discover [--register]

  Additional local stores, each bound to a scope. recall, inject and list read every store;
  an engram learned with a store's scope is written there (a read-only store is never
  written); everything else goes to the primary store.

  A store is keyed by its path: adding a path again changes nothing (even with another
  scope). The registry lives in the primary store's local.yaml: paths are machine-specific,
  so it is never synced; register the stores on each machine.

  Flags
    --shared     the store is shared with others (e.g. a team repository)
    --readonly   never write to this store
    --register   (discover) register the discovered scopes`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    shared: { type: 'boolean', default: false },
    readonly: { type: 'boolean', default: false },
    register: { type: 'boolean', default: false },
  });
  const out = makeOutput(cli.flags);
  const [sub = 'list', ...args] = cli.input;
  const root = resolveStoreRoot(cli.flags.path);

  switch (sub) {
    case 'list':
    case 'ls': {
      if (args.length) throw invalid('usage: svc stores list');
      const remote = remoteOf(await loadProjectConfig(process.cwd()));
      const rows = [
        ...(await listStores(root)),
        ...(remote ? await (await import('../../engine/remote/discover.js')).remoteStoreRows(remote) : []),
      ];
      for (const r of rows) if (r.warning) out.warn(r.warning);
      out.result({ count: rows.length, stores: rows.map(({ warning: _w, ...r }) => r) }, () => formatRows(rows));
      return 0;
    }
    case 'add': {
      if (args.length !== 2) throw invalid('usage: svc stores add <path> <scope> [--shared] [--readonly]');
      const [path, scope] = args as [string, string];
      const r = await addStore(root, { path, scope, shared: cli.flags.shared, readonly: cli.flags.readonly });
      for (const w of r.warnings) out.warn(w);
      out.result(r.json, () => r.text);
      return 0;
    }
    case 'remove':
    case 'rm': {
      if (args.length !== 1) throw invalid('usage: svc stores remove <path>');
      const removed = await removeStore(root, args[0]!);
      if (!removed) throw new SvcError('not_found', `no store is registered at ${args[0]}`);
      out.result(
        { action: 'removed', store: removed },
        () => `Unregistered ${removed.path} (scope ${removed.scope}); its files are untouched`,
      );
      return 0;
    }
    case 'discover': {
      if (args.length) throw invalid('usage: svc stores discover [--register]');
      const project = await loadProjectConfig(process.cwd());
      const remote = remoteOf(project);
      if (!remote) throw invalid(DISCOVER_NEEDS_HUB);
      const { discoverScopes } = await import('../../engine/remote/discover.js');
      const d = await discoverScopes(remote, project!.path, cli.flags.register === true);
      if (d.note) out.warn(d.note);
      out.result(d, () =>
        [
          `Scopes you may use on ${d.hub}:`,
          ...d.scopes.map(
            (s) =>
              `  ${s.scope.padEnd(28)} ${String(s.engrams).padStart(7)} engrams  ${s.writable ? 'read/write' : 'read'}${s.queried ? '' : '  (not in remote_scopes: svc stores discover --register)'}`,
          ),
          ...(d.registered.length ? [`Registered in ${project!.path}: ${d.registered.join(', ')}`] : []),
        ].join('\n'),
      );
      return 0;
    }
    default:
      throw invalid(`unknown subcommand "stores ${sub}": use list, add, remove or discover`);
  }
}

function formatRows(rows: StoreRow[]): string {
  const scopeWidth = Math.max(5, ...rows.map((r) => r.scope.length));
  const lines = [`${'SCOPE'.padEnd(scopeWidth)}  ${'ENGRAMS'.padStart(7)}  PATH`];
  for (const r of rows) {
    const flags = [
      r.role === 'primary' ? 'primary: every other scope' : r.role === 'remote' ? 'hub' : '',
      r.shared ? 'shared' : '',
      r.readonly ? 'read-only' : '',
      r.available ? '' : r.role === 'remote' ? 'unreachable' : 'unavailable',
    ]
      .filter(Boolean)
      .join(', ');
    const count = r.engrams === null ? '-' : String(r.engrams);
    lines.push(`${r.scope.padEnd(scopeWidth)}  ${count.padStart(7)}  ${r.path}${flags ? `  (${flags})` : ''}`);
  }
  return lines.join('\n');
}
