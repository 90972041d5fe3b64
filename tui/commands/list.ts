import { invalid } from '../../engine/errors.js';
import { ENGRAM_STATUSES, ENGRAM_TYPES } from '../../engine/model/engram-types.js';
import { engramLine } from '../format.js';
import { engramSummary } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { remoteOf } from '../../engine/remote/hub-client.js';

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

  In a project whose .svc.yaml names a hub, the hub's engrams are listed too (marked [hub]), and
  this machine's team writes still waiting in the outbox for it (marked [queued]).`;

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
    const remote = f.meta ? null : remoteOf(await loadProjectConfig(process.cwd()));
    const filter = { scope: f.scope, domain: f.domain, type: f.type, status: f.status, idPrefix: f.meta ? 'META-' : undefined };
    const team = remote ? await import('../../engine/remote/team-list.js') : undefined;
    const list = team
      ? await team.listWithHub(store, remote, filter, limit, store.root)
      : { rows: (await store.list({ ...filter, limit })).map((doc) => ({ doc, source: 'local' as const })), hub: undefined };
    const hub = list.hub;
    if (team && hub && !hub.complete) out.warn(team.incompleteLine(hub, limit));
    const rows = list.rows;
    const body = {
      count: rows.length,
      engrams: rows.map((r) => (hub ? { ...engramSummary(r.doc), source: r.source } : engramSummary(r.doc))),
      ...(hub ? { sources: { local: 'ok', hub: hub.state }, complete: hub.complete } : {}),
    };
    out.result(body, () =>
      rows.length
        ? rows.map((r) => `${engramLine(r.doc)}${r.source === 'hub' ? '  [hub]' : r.source === 'outbox' ? '  [queued]' : ''}`).join('\n')
        : 'No engrams.',
    );
    return 0;
  } finally {
    store.close();
  }
}
