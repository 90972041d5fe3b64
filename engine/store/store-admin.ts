import { existsSync, readdirSync, statSync } from 'node:fs';
import { SvcError, invalid } from '../errors.js';
import { checkScope } from '../model/scope.js';
import { LocalStore } from './local-store.js';
import { MultiStore } from './multi-store.js';
import { addToRegistry, readRegistry, removeFromRegistry, storeKey, type AddOutcome, type StoreEntry } from './store-registry.js';

// What `svc stores` and the svc_stores_* tools do, shared by both: list the primary and the
// registered stores with their counts, register a store (creating an empty one when the folder
// is new) and unregister one, answering with the rows, JSON and text the CLI prints. The
// composite that reads and writes across those stores is multi-store.ts.

/** `stores discover` asks a hub which scopes the user may use; a local-only engine has none. */
export const DISCOVER_NEEDS_HUB =
  'stores discover needs a hub (svc init-remote --url <hub> --token <key>): it asks the hub which scopes you are authorized for. ' +
  'Local stores are registered with svc stores add <path> <scope>';

export interface StoreRow {
  /** The scope the store serves; `*` for the primary store (every scope no other store serves). */
  scope: string;
  path: string;
  /** remote: a hub scope recall asks for (path is the hub's address). */
  role: 'primary' | 'added' | 'remote';
  /** Engrams in the store (any status); null when it cannot be opened. */
  engrams: number | null;
  shared: boolean;
  readonly: boolean;
  available: boolean;
  id_prefix: string | null;
  added_at?: string;
  /** Why it is unavailable (not part of the JSON rows). */
  warning?: string;
}

async function rowOf(store: LocalStore, entry: StoreEntry | null): Promise<StoreRow> {
  const stats = await store.stats();
  return {
    scope: entry?.scope ?? '*',
    path: store.root,
    role: entry ? 'added' : 'primary',
    engrams: stats.engrams,
    shared: entry?.shared ?? false,
    readonly: entry?.readonly ?? false,
    available: true,
    id_prefix: store.idPrefix(),
    ...(entry?.added_at ? { added_at: entry.added_at } : {}),
  };
}

/** The primary store and every registered store, with engram counts. */
export async function listStores(root: string): Promise<StoreRow[]> {
  const multi = await MultiStore.open(root, 'fast');
  try {
    const rows: StoreRow[] = [];
    for (const m of multi.members()) rows.push(await rowOf(m.store, m.entry));
    for (const gone of multi.missing) {
      rows.push({
        scope: gone.entry.scope,
        path: gone.entry.path,
        role: 'added',
        engrams: null,
        shared: gone.entry.shared,
        readonly: gone.entry.readonly,
        available: false,
        id_prefix: null,
        ...(gone.entry.added_at ? { added_at: gone.entry.added_at } : {}),
        warning: `the store for scope ${gone.entry.scope} at ${gone.entry.path} is unavailable: ${gone.reason}`,
      });
    }
    return rows;
  } finally {
    multi.close();
  }
}

/** Does `path` look like a folder svc may turn into (or use as) a store? */
function checkStoreFolder(path: string, readonly: boolean): void {
  if (!existsSync(path)) {
    if (readonly)
      throw new SvcError(
        'not_found',
        `${path} does not exist: a read-only store must be an existing store (e.g. a clone of a team repository)`,
      );
    return; // created empty
  }
  if (!statSync(path).isDirectory()) throw invalid(`${path} is not a folder`);
  const entries = readdirSync(path);
  const looksLikeStore = ['engrams', 'local.yaml', 'config.yaml'].some((f) => entries.includes(f));
  if (!looksLikeStore && entries.length > 0) {
    throw invalid(
      `${path} is neither empty nor an svc store (it has no engrams/ folder): give an empty or new folder, or an existing store`,
    );
  }
}

export interface AddStoreResult {
  outcome: AddOutcome;
  row: StoreRow | null;
  warnings: string[];
  json: Record<string, unknown>;
  text: string;
}

/**
 * Registers a store (creating an empty one when the folder is new). Adding a path that is
 * registered already changes nothing and says so. Holds the primary store's write lock while
 * it edits local.yaml.
 */
export async function addStore(
  root: string,
  request: { path: string; scope: string; shared?: boolean; readonly?: boolean },
  now: Date = new Date(),
): Promise<AddStoreResult> {
  const bad = checkScope(request.scope);
  if (bad) throw invalid(bad);
  const key = storeKey(request.path);
  const primary = await LocalStore.open(root, 'fast');
  const warnings: string[] = [];
  try {
    const entries = await readRegistry(primary.root);
    const registered = entries.find((e) => storeKey(e.path) === key);
    const owner = entries.find((e) => e.scope === request.scope);
    if (!registered && owner)
      throw new SvcError('conflict', `scope ${request.scope} is already served by the store at ${owner.path}; one scope has one store`);
    if (!registered && key !== storeKey(primary.root)) checkStoreFolder(key, request.readonly ?? false);
    let added: LocalStore | undefined;
    try {
      if (!registered && key !== storeKey(primary.root)) {
        // Open (and so initialise) it first: a folder svc cannot use is never registered.
        added = await LocalStore.open(key, 'full');
        warnings.push(...added.warnings.splice(0).map((w) => `${key}: ${w}`));
      }
      const outcome = await primary.write(() => addToRegistry(primary.root, request, now));
      const row = added && outcome.action === 'added' ? await rowOf(added, outcome.entry) : null;
      const e = outcome.entry;
      if (outcome.action === 'added') {
        return {
          outcome,
          row,
          warnings,
          json: { action: 'added', store: { ...e, engrams: row?.engrams ?? null, id_prefix: row?.id_prefix ?? null } },
          text:
            `Added ${e.path} for scope ${e.scope}${e.readonly ? ' (read-only)' : ''}${e.shared ? ' (shared)' : ''}: ${row?.engrams ?? 0} engram(s). ` +
            (e.readonly
              ? 'recall, inject and list read it; svc never writes to it.'
              : `Engrams learned with --scope ${e.scope} are written there.`),
        };
      }
      return {
        outcome,
        row: null,
        warnings,
        json: { action: 'unchanged', reason: outcome.reason, store: e, requested: outcome.requested },
        text: `Nothing changed: ${outcome.reason}.`,
      };
    } finally {
      added?.close();
    }
  } finally {
    primary.close();
  }
}

export async function removeStore(root: string, path: string): Promise<StoreEntry | null> {
  const primary = await LocalStore.open(root, 'fast');
  try {
    return await primary.write(() => removeFromRegistry(primary.root, path));
  } finally {
    primary.close();
  }
}
