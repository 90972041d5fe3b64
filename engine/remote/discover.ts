import { readFileSync } from 'node:fs';
import { isSharedScope } from '../model/scope.js';
import { writeFileDurable } from '../store/durable-write.js';
import type { StoreRow } from '../store/store-admin.js';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';

// Which hub scopes a developer's svc uses: the hub says which the token may read and write (with
// live counts, GET /me/scopes); the project's remote_scopes, when set, is the whitelist recall
// asks for. Registering adds the shared scopes (not user:) the whitelist lacks; without a
// whitelist every readable scope is asked for already, and nothing needs registering.

export interface HubScope {
  scope: string;
  writable: boolean;
  engrams: number;
  shared: boolean;
  /** Whether recall asks the hub for it (in the whitelist, or no whitelist). */
  queried: boolean;
}

export interface Discovery {
  hub: string;
  whitelist: string[] | null;
  scopes: HubScope[];
  /** Scopes added to remote_scopes by this call. */
  registered: string[];
  note?: string;
}

const TIMEOUT_MS = 5_000;

export async function hubScopeList(remote: RemoteConfig, deadlineMs = TIMEOUT_MS): Promise<HubScope[]> {
  const r = await new HubClient(remote).call<{ items: Array<{ scope: string; writable: boolean; engrams: number }> }>(
    'GET',
    '/me/scopes',
    deadlineMs,
  );
  return r.body.items.map((s) => ({ ...s, shared: isSharedScope(s.scope), queried: !remote.scopes || remote.scopes.includes(s.scope) }));
}

/** The hub scopes recall asks for, as rows of `stores list` (with a warning when the hub does not answer). */
export async function remoteStoreRows(remote: RemoteConfig): Promise<StoreRow[]> {
  try {
    return (await hubScopeList(remote, 1_500))
      .filter((s) => s.queried)
      .map((s) => ({
        scope: s.scope,
        path: remote.url,
        role: 'remote',
        engrams: s.engrams,
        shared: s.shared,
        readonly: !s.writable,
        available: true,
        id_prefix: null,
      }));
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    // Whether its scopes may be written is unknown while it does not answer: not called read-only.
    return [
      {
        scope: '(hub)',
        path: remote.url,
        role: 'remote',
        engrams: null,
        shared: true,
        readonly: false,
        available: false,
        id_prefix: null,
        warning: `${err.message}: its scopes are not listed`,
      },
    ];
  }
}

export async function discoverScopes(remote: RemoteConfig, configPath: string, register: boolean): Promise<Discovery> {
  const scopes = await hubScopeList(remote);
  const whitelist = remote.scopes ?? null;
  if (!register) return { hub: remote.url, whitelist, scopes, registered: [] };
  if (!whitelist) {
    return {
      hub: remote.url,
      whitelist,
      scopes,
      registered: [],
      note: 'no remote_scopes whitelist: recall already asks the hub for every scope you may read',
    };
  }
  const added = scopes.filter((s) => s.shared && !whitelist.includes(s.scope)).map((s) => s.scope);
  if (added.length > 0) await writeWhitelist(configPath, [...whitelist, ...added]);
  for (const s of scopes) if (added.includes(s.scope)) s.queried = true;
  return { hub: remote.url, whitelist: [...whitelist, ...added], scopes, registered: added };
}

/** Rewrites remote_scopes in .svc.yaml, keeping its other keys and comments. */
async function writeWhitelist(path: string, scopes: string[]): Promise<void> {
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(readFileSync(path, 'utf8'));
  doc.set('remote_scopes', scopes);
  writeFileDurable(path, doc.toString());
}
