import { z } from './sdk-deps.js';
import * as f from './fields.js';
import { ToolFailure } from './dispatch.js';
import { defineTool, type ToolContext } from './types.js';
import { canRebuild } from '../backend.js';

// svc_stores_add, svc_stores_list, svc_sync and svc_sync_status. They work on the local store the server runs on (ctx.local); on the hub
// (no local store) they answer with a clear error. The engine modules load on first call.

function localRoot(ctx: ToolContext, tool: string): string {
  if (!ctx.local) throw new ToolFailure(`${tool} works on a local store; this server has none`);
  return ctx.local.root;
}

/** The running backend, when it can take a newly registered store (a MultiStore). */
async function attachable(ctx: ToolContext): Promise<import('../store/multi-store.js').MultiStore | null> {
  const { MultiStore } = await import('../store/multi-store.js');
  return ctx.backend instanceof MultiStore ? ctx.backend : null;
}

export const storesAddTool = defineTool({
  name: 'svc_stores_add',
  title: 'Add store',
  description:
    'Register an additional local engram store, bound to a scope. A store is keyed by its path: adding a second scope to the same path changes nothing.',
  input: z.strictObject({
    path: f.text('Folder of the store.'),
    scope: f.scope('Scope the store serves, e.g. group:platform.'),
    shared: z.boolean().default(false).describe('The store is shared with others (e.g. a team repository).'),
    readonly: z.boolean().default(false).describe('Never write to this store.'),
  }),
  machineLocal: 'registers a store folder on the machine it runs on',
  destructive: false,
  readOnly: false,
  async handler(ctx, args) {
    const root = localRoot(ctx, 'svc_stores_add');
    const { addStore } = await import('../store/store-admin.js');
    const r = await addStore(root, args, ctx.now());
    for (const w of r.warnings) ctx.log?.(w);
    let active = false;
    if (r.outcome.action === 'added') {
      const multi = await attachable(ctx);
      if (multi) active = (await multi.attach(r.outcome.entry)) !== null;
    }
    return {
      ...r.json,
      ...(r.outcome.action === 'added'
        ? {
            active_now: active,
            ...(active ? {} : { note: 'recall and learn of this server span the store after a restart of the MCP server' }),
          }
        : {}),
    };
  },
});

export const storesListTool = defineTool({
  name: 'svc_stores_list',
  title: 'List stores',
  description: 'The stores this engine reads and writes: scope, path (or remote address), engram count, shared and read-only flags.',
  input: z.strictObject({}),
  machineLocal: 'lists the store folders of the machine it runs on',
  destructive: false,
  readOnly: true,
  async handler(ctx) {
    const root = localRoot(ctx, 'svc_stores_list');
    const { listStores } = await import('../store/store-admin.js');
    const rows = [
      ...(await listStores(root)),
      ...(ctx.remote ? await (await import('../remote/discover.js')).remoteStoreRows(ctx.remote) : []),
    ];
    return {
      count: rows.length,
      stores: rows.map(({ warning: _w, ...r }) => r),
      warnings: rows.flatMap((r) => (r.warning ? [r.warning] : [])),
    };
  },
});

export const syncTool = defineTool({
  name: 'svc_sync',
  title: 'Sync',
  description:
    'Git-based sync of the store with its remote: pull then push. With remote, set the remote address first (first time). full: true drops and rebuilds the search index from the YAML files. Engrams of scope local never leave the machine.',
  input: z.strictObject({
    remote: f.optionalText('Git remote address to set (first sync only).'),
    full: z.boolean().default(false).describe('Rebuild the derived index from the YAML files.'),
  }),
  machineLocal: 'syncs a local store through git',
  destructive: true,
  readOnly: false,
  async handler(ctx, { remote, full }) {
    const root = localRoot(ctx, 'svc_sync');
    let synced: Record<string, unknown> = {};
    if (remote !== undefined || !full) {
      const { syncStores } = await import('../store/git-sync.js');
      const all = await syncStores(root, { remote, now: () => ctx.now() });
      for (const w of all.warnings) ctx.log?.(w);
      synced = {
        ...(all.primary ?? { root, remote: null }),
        stores: all.stores,
        conflict_count: (all.primary?.conflicts.length ?? 0) + all.stores.reduce((n, s) => n + (s.report?.conflicts.length ?? 0), 0),
        warnings: all.warnings,
      };
    }
    if (full) {
      const backend = ctx.backend;
      if (!canRebuild(backend)) throw new ToolFailure('svc_sync full: this backend has no index to rebuild');
      try {
        await backend.rebuild();
      } catch (err) {
        throw new ToolFailure(`svc_sync: index rebuild failed; the YAML files are untouched: ${(err as Error).message}`);
      }
    } else {
      await ctx.backend.refresh();
    }
    const stats = await ctx.backend.stats();
    return { ...synced, ...(full ? { rebuilt: true } : {}), engrams: stats.engrams, episodes: stats.episodes };
  },
});

export const syncStatusTool = defineTool({
  name: 'svc_sync_status',
  title: 'Sync status',
  description:
    'Where the store stands against its remote: remote address, last sync, commits ahead and behind, uncommitted engrams, outbox size.',
  input: z.strictObject({}),
  machineLocal: "reports on a local store's git sync",
  destructive: false,
  readOnly: true,
  async handler(ctx) {
    const root = localRoot(ctx, 'svc_sync_status');
    const { syncStatus } = await import('../store/git-sync-state.js');
    return syncStatus(root);
  },
});
