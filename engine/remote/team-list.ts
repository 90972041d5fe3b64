import type { EngramBackend, ListFilter } from '../backend.js';
import type { EngramDoc } from '../model/engram-types.js';
import { learnedAt } from '../model/learned-at.js';
import { byCodeUnit } from '../text.js';
import { HubClient, RemoteFailure, type RemoteConfig } from './hub-client.js';
import { REMOTE_WRITE_TIMEOUT_MS } from './team-outbox.js';
import { queuedDoc, queuedLearns, sendWithin } from './queued.js';

// `svc list` and the MCP svc_list in a project that names a hub: the local engrams, then the
// hub's that do not repeat one (by content), newest first, within the limit. The hub's pages are
// followed up to the limit; when the hub holds more than was fetched, the answer says so. The
// author's team writes still queued in the outbox are listed too (source `outbox`).

/** How long the hub's pages may take, all together. */
export const TEAM_LIST_BUDGET_MS = 10_000;
/** The most hub engrams a list without a limit fetches. */
export const TEAM_LIST_CAP = 10_000;

export interface TeamListRow {
  doc: EngramDoc;
  /** `outbox`: a team write of this machine still queued for the hub. */
  source: 'local' | 'hub' | 'outbox';
}

export interface TeamList {
  rows: TeamListRow[];
  /** Absent without a hub. `complete` is false when the hub holds more than the list shows. */
  hub?: { state: string; complete: boolean; error?: string };
}

/** `storeRoot`: the store whose outbox holds this machine's queued team writes. */
export async function listWithHub(
  backend: EngramBackend,
  remote: RemoteConfig | null,
  filter: ListFilter,
  limit: number | undefined,
  storeRoot: string,
): Promise<TeamList> {
  const engrams = await backend.list({ ...filter, limit });
  if (!remote || filter.idPrefix) return { rows: engrams.map((doc) => ({ doc, source: 'local' })) };
  let hub: TeamList['hub'];
  let items: EngramDoc[] = [];
  try {
    const got = await new HubClient(remote).list(
      { scope: filter.scope, type: filter.type, domain: filter.domain, status: filter.status },
      limit ?? TEAM_LIST_CAP,
      TEAM_LIST_BUDGET_MS,
    );
    items = (got.items as unknown as EngramDoc[]).filter((e) => !remote.scopes || remote.scopes.includes(e.scope));
    hub = { state: 'ok', complete: got.complete };
    // The hub answers: what waits for it goes now, and shows as the hub's.
    for (const d of await sendWithin(storeRoot, remote, REMOTE_WRITE_TIMEOUT_MS)) {
      if (d.outcome === 'delivered' && d.answer && matches(d.answer as unknown as EngramDoc, filter))
        items.push(d.answer as unknown as EngramDoc);
    }
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    hub = { state: err.kind, complete: false, error: err.message };
  }
  const seen = new Set(engrams.map((e) => e.content_hash));
  const hubRows = items.filter((e) => !seen.has(e.content_hash));
  for (const e of hubRows) seen.add(e.content_hash);
  // The author's writes still queued for the hub, so none vanishes from view while it waits.
  const queued = queuedLearns(storeRoot, remote)
    .map(queuedDoc)
    .filter((d) => matches(d, filter) && !seen.has(d.content_hash));
  const rows: TeamListRow[] = [
    ...engrams.map((doc) => ({ doc, source: 'local' as const })),
    ...hubRows.map((doc) => ({ doc, source: 'hub' as const })),
    ...queued.map((doc) => ({ doc, source: 'outbox' as const })),
  ].sort((a, b) => byCodeUnit(learnedAt(b.doc) ?? '', learnedAt(a.doc) ?? ''));
  return { rows: rows.slice(0, limit ?? Infinity), hub };
}

/** The list's filters, for engrams that did not come from a filtered query. */
function matches(e: EngramDoc, f: ListFilter): boolean {
  if (f.scope && e.scope !== f.scope) return false;
  if (f.type && e.type !== f.type) return false;
  if (f.domain && !(e.domain === f.domain || (e.domain ?? '').startsWith(`${f.domain}.`))) return false;
  return f.status ? e.status === f.status : e.status !== 'retired';
}

/** The warning for a list that does not show all the hub holds. */
export function incompleteLine(hub: NonNullable<TeamList['hub']>, limit: number | undefined): string {
  if (hub.error) return `${hub.error}: local engrams only`;
  return limit === undefined
    ? `the hub holds more engrams than the ${TEAM_LIST_CAP} listed (or they took over ${TEAM_LIST_BUDGET_MS / 1000} s): narrow with --scope, --domain or --type`
    : `the hub holds more engrams than --limit ${limit} shows: raise --limit or narrow with --scope, --domain or --type`;
}
