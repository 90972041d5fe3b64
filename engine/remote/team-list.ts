import type { EngramBackend, ListFilter } from '../backend.js';
import type { EngramDoc } from '../model/engram-schema.js';
import { byCodeUnit } from '../text.js';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';

// `svc list` and the MCP svc_list in a project that names a hub: the local engrams, then the
// hub's that do not repeat one (by content), newest first, within the limit. The hub's pages are
// followed up to the limit; when the hub holds more than was fetched, the answer says so.

/** How long the hub's pages may take, all together. */
export const TEAM_LIST_BUDGET_MS = 10_000;
/** The most hub engrams a list without a limit fetches. */
export const TEAM_LIST_CAP = 10_000;

export interface TeamListRow {
  doc: EngramDoc;
  source: 'local' | 'hub';
}

export interface TeamList {
  rows: TeamListRow[];
  /** Absent without a hub. `complete` is false when the hub holds more than the list shows. */
  hub?: { state: string; complete: boolean; error?: string };
}

export async function listWithHub(backend: EngramBackend, remote: RemoteConfig | null, filter: ListFilter, limit: number | undefined): Promise<TeamList> {
  const engrams = await backend.list({ ...filter, limit });
  if (!remote || filter.idPrefix) return { rows: engrams.map((doc) => ({ doc, source: 'local' })) };
  let hub: TeamList['hub'];
  let items: EngramDoc[] = [];
  try {
    const got = await new HubClient(remote).list({ scope: filter.scope, type: filter.type, domain: filter.domain, status: filter.status }, limit ?? TEAM_LIST_CAP, TEAM_LIST_BUDGET_MS);
    items = (got.items as unknown as EngramDoc[]).filter((e) => !remote.scopes || remote.scopes.includes(e.scope));
    hub = { state: 'ok', complete: got.complete };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    hub = { state: err.kind, complete: false, error: err.message };
  }
  const seen = new Set(engrams.map((e) => e.content_hash));
  const rows: TeamListRow[] = [
    ...engrams.map((doc) => ({ doc, source: 'local' as const })),
    ...items.filter((e) => !seen.has(e.content_hash)).map((doc) => ({ doc, source: 'hub' as const })),
  ].sort((a, b) => byCodeUnit(learnedAt(b.doc), learnedAt(a.doc)));
  return { rows: rows.slice(0, limit ?? Infinity), hub };
}

const learnedAt = (e: EngramDoc): string => (e.temporal as { learned_at?: string } | undefined)?.learned_at ?? '';

/** The warning for a list that does not show all the hub holds. */
export function incompleteLine(hub: NonNullable<TeamList['hub']>, limit: number | undefined): string {
  if (hub.error) return `${hub.error}: local engrams only`;
  return limit === undefined
    ? `the hub holds more engrams than the ${TEAM_LIST_CAP} listed (or they took over ${TEAM_LIST_BUDGET_MS / 1000} s): narrow with --scope, --domain or --type`
    : `the hub holds more engrams than --limit ${limit} shows: raise --limit or narrow with --scope, --domain or --type`;
}
