import { invalid } from '../../engine/errors.js';
import { ENGRAM_STATUSES, ENGRAM_TYPES } from '../../engine/model/engram-schema.js';
import { engramLine } from '../format.js';
import { engramSummary } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';
import type { EngramDoc } from '../../engine/model/engram-schema.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { remoteOf } from '../../engine/remote/hub-client.js';
import { byCodeUnit } from '../../engine/text.js';

const HELP = `
  Usage
    svc list [flags]

  Flags
    --scope <s>    only this scope
    --domain <d>   only this domain and its sub-domains
    --type <t>     ${ENGRAM_TYPES.join(', ')}
    --status <s>   ${ENGRAM_STATUSES.join(', ')} (default: all but retired)
    --limit <n>    at most n engrams
    --meta         only META- engrams

  In a project whose .svc.yaml names a hub, the hub's engrams are listed too (marked [hub]).`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    scope: { type: 'string' },
    domain: { type: 'string' },
    type: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'number' },
    meta: { type: 'boolean', default: false },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  if (f.type && !(ENGRAM_TYPES as readonly string[]).includes(f.type)) {
    throw invalid(`--type must be one of ${ENGRAM_TYPES.join(', ')} (got "${f.type}")`);
  }
  if (f.status && !(ENGRAM_STATUSES as readonly string[]).includes(f.status)) {
    throw invalid(`--status must be one of ${ENGRAM_STATUSES.join(', ')} (got "${f.status}")`);
  }
  const limit = f.limit === undefined ? undefined : positiveInt(f.limit, 'limit', 1);
  const store = await openStore(f, 'full', out);
  try {
    const engrams = await store.list({
      scope: f.scope,
      domain: f.domain,
      type: f.type,
      status: f.status,
      idPrefix: f.meta ? 'META-' : undefined,
      limit,
    });
    const hub = f.meta ? null : await hubList({ scope: f.scope, type: f.type, domain: f.domain, status: f.status }, limit);
    if (hub?.error) out.warn(`${hub.error}: local engrams only`);
    // The hub's engrams after the local ones they do not repeat, newest first, within --limit.
    const seen = new Set(engrams.map((e) => e.content_hash));
    const rows = [
      ...engrams.map((e) => ({ doc: e, source: 'local' as const })),
      ...(hub?.items ?? []).filter((e) => !seen.has(e.content_hash)).map((e) => ({ doc: e, source: 'hub' as const })),
    ]
      .sort((a, b) => byCodeUnit(learnedAt(b.doc), learnedAt(a.doc)))
      .slice(0, limit ?? Infinity);
    const body = { count: rows.length, engrams: rows.map((r) => (hub ? { ...engramSummary(r.doc), source: r.source } : engramSummary(r.doc))), ...(hub ? { sources: { local: 'ok', hub: hub.state } } : {}) };
    out.result(body, () => (rows.length ? rows.map((r) => `${engramLine(r.doc)}${r.source === 'hub' ? '  [hub]' : ''}`).join('\n') : 'No engrams.'));
    return 0;
  } finally {
    store.close();
  }
}

const learnedAt = (e: EngramDoc): string => (e.temporal as { learned_at?: string } | undefined)?.learned_at ?? '';

/** The hub's engrams for `svc list`, when the project names a hub (1.5 s, like recall). */
async function hubList(
  filter: { scope?: string; type?: string; domain?: string; status?: string },
  limit: number | undefined,
): Promise<{ items: EngramDoc[]; state: string; error?: string } | null> {
  const remote = remoteOf(await loadProjectConfig(process.cwd()));
  if (!remote) return null;
  const [{ HubClient, RemoteFailure }, { TEAM_RECALL_BUDGET_MS }] = await Promise.all([import('../../engine/remote/hub-client.js'), import('../../engine/remote/team-recall.js')]);
  try {
    const items = (await new HubClient(remote).list(filter, limit ?? 200, TEAM_RECALL_BUDGET_MS)) as unknown as EngramDoc[];
    return { items: items.filter((e) => !remote.scopes || remote.scopes.includes(e.scope)), state: 'ok' };
  } catch (err) {
    if (!(err instanceof RemoteFailure)) throw err;
    return { items: [], state: err.kind, error: err.message };
  }
}
