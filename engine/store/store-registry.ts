import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { invalid, SvcError } from '../errors.js';
import { checkScope } from '../model/scope.js';
import { writeFileDurable } from './durable-write.js';
import { parseYaml } from './yaml-codec.js';

// The registry of additional stores, kept in the primary store's `local.yaml` under `stores:`.
//
// Why local.yaml and not a committed `stores.yaml`: a registered store is named by a folder
// path, and paths are machine-specific (another machine that syncs this store has other home
// folders, or does not have the team repository checked out at all). local.yaml is already
// the machine-local file of a store (.gitignore keeps it out of git; it holds the machine's id
// prefix), so the registry never travels with `svc sync`. Each machine registers its own.
//
//   # This machine's copy of the store.
//   id_prefix: KQ7M
//   stores:
//     - path: /home/me/team-memory
//       scope: project:web
//       shared: true
//       readonly: false
//       added_at: 2026-11-22T10:00:00.000Z
//
// A store is keyed by its (real, absolute) path: registering a path twice changes nothing.
// A scope is served by at most one registered store, so a write to it has one destination.

export interface StoreEntry {
  /** Absolute path of the store folder (symlinks resolved when it exists). */
  path: string;
  /** The scope this store serves: writes to it land here. */
  scope: string;
  /** Shared with others (e.g. a team repository); informational, shown by `stores list`. */
  shared: boolean;
  /** svc never writes engrams here; a write aimed at its scope fails. */
  readonly: boolean;
  added_at?: string;
}

export type AddOutcome =
  | { action: 'added'; entry: StoreEntry }
  /** The path was registered already (possibly with another scope): nothing changed. */
  | { action: 'unchanged'; entry: StoreEntry; requested: { scope: string; shared: boolean; readonly: boolean }; reason: string };

const LOCAL_FILE = 'local.yaml';
const HAS_STORES = /^stores\s*:/m;

/** The canonical key of a store folder: absolute, with symlinks resolved when it exists. */
export function storeKey(path: string): string {
  const abs = resolve(path);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

function localYamlPath(root: string): string {
  return join(root, LOCAL_FILE);
}

/** Cheap check for the hot path (every recall opens the store): no `stores:` key, no YAML parser. */
export function hasRegisteredStores(root: string): boolean {
  const path = localYamlPath(root);
  if (!existsSync(path)) return false;
  return HAS_STORES.test(readFileSync(path, 'utf8'));
}

/** The registered stores of the primary store at `root`, in registration order. */
export async function readRegistry(root: string): Promise<StoreEntry[]> {
  const path = localYamlPath(root);
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  if (!HAS_STORES.test(text)) return [];
  let data: unknown;
  try {
    // Every command of a store with others registered reads this: no YAML package for what svc writes.
    data = parseYaml(text);
  } catch (err) {
    throw new SvcError('storage', `${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const list = (data as { stores?: unknown } | null)?.stores;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new SvcError('storage', `${path}: stores must be a list`);
  return list.map((raw, i) => parseEntry(raw, `${path}: stores[${i}]`));
}

function parseEntry(raw: unknown, where: string): StoreEntry {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new SvcError('storage', `${where} must be a mapping`);
  const r = raw as Record<string, unknown>;
  if (typeof r.path !== 'string' || r.path.trim() === '') throw new SvcError('storage', `${where}.path must be a non-empty string`);
  if (typeof r.scope !== 'string' || checkScope(r.scope)) throw new SvcError('storage', `${where}.scope is not a valid scope`);
  return {
    path: resolve(r.path),
    scope: r.scope,
    shared: r.shared === true,
    readonly: r.readonly === true,
    ...(typeof r.added_at === 'string' ? { added_at: r.added_at } : {}),
  };
}

async function writeRegistry(root: string, entries: StoreEntry[]): Promise<void> {
  const path = localYamlPath(root);
  if (!existsSync(path)) throw new SvcError('storage', `${root} has no ${LOCAL_FILE}: open the store once before registering stores`);
  const { parseDocument } = await import('yaml');
  // Edit the document in place so the comment and id_prefix line stay as they are.
  const doc = parseDocument(readFileSync(path, 'utf8'));
  if (entries.length === 0) doc.delete('stores');
  else
    doc.set(
      'stores',
      entries.map((e) => ({ ...e })),
    );
  writeFileDurable(path, doc.toString({ lineWidth: 0 }));
}

/**
 * Registers `path` as a store serving `scope`. A path already registered is left as it is
 * (reported as unchanged, whatever scope was asked for); a scope already served by another
 * registered store is refused, since a write to it must have one destination.
 */
export async function addToRegistry(
  root: string,
  request: { path: string; scope: string; shared?: boolean; readonly?: boolean },
  now: Date = new Date(),
): Promise<AddOutcome> {
  const bad = checkScope(request.scope);
  if (bad) throw invalid(bad);
  const key = storeKey(request.path);
  if (key === storeKey(root)) throw invalid(`${key} is the primary store itself; add another folder`);
  const entries = await readRegistry(root);
  const requested = { scope: request.scope, shared: request.shared ?? false, readonly: request.readonly ?? false };
  const existing = entries.find((e) => storeKey(e.path) === key);
  if (existing) {
    const reason =
      existing.scope === request.scope
        ? `${key} is already registered for scope ${existing.scope}`
        : `${key} is already registered for scope ${existing.scope}; a store is keyed by its path, so scope ${request.scope} was not added`;
    return { action: 'unchanged', entry: existing, requested, reason };
  }
  const owner = entries.find((e) => e.scope === request.scope);
  if (owner)
    throw new SvcError('conflict', `scope ${request.scope} is already served by the store at ${owner.path}; one scope has one store`);
  const entry: StoreEntry = { path: key, ...requested, added_at: now.toISOString() };
  await writeRegistry(root, [...entries, entry]);
  return { action: 'added', entry };
}

/** Unregisters the store at `path` (its files are left alone); returns the entry, or null if it was not registered. */
export async function removeFromRegistry(root: string, path: string): Promise<StoreEntry | null> {
  const key = storeKey(path);
  const entries = await readRegistry(root);
  const found = entries.find((e) => storeKey(e.path) === key);
  if (!found) return null;
  await writeRegistry(
    root,
    entries.filter((e) => e !== found),
  );
  return found;
}
