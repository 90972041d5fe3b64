import { invalid } from '../../engine/errors.js';
import { learn } from '../../engine/ops/learn.js';
import { learnSummary } from '../../engine/ops/result-json.js';
import { systemContext } from '../../engine/ops/context.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { checkScope } from '../../engine/model/scope.js';
import type { DualCoding, EngramType, KnowledgeAnchor, Visibility } from '../../engine/model/engram-types.js';
import { makeOutput, openStore, parseArgs, parseJsonFlag, splitList, textArgument } from '../../engine/cli/cli-kit.js';
import { MAX_STATEMENT_CHARS } from '../../engine/ops/edit.js';
import { embedderFor } from '../embedding.js';
import { remoteOf } from '../../engine/remote/hub-client.js';

const HELP = `
  Usage
    svc learn <statement> [flags]
    echo "<statement>" | svc learn [flags]

  Flags
    --type <t>                 behavioral (default), terminological, procedural, architectural
    --domain <d>               topic, a dotted path (default: .svc.yaml domain)
    --scope <s>                scope (default: .svc.yaml scope, else the scope of the closest
                               engrams when they agree (printed with why), else global; a
                               hub's team scope only with route_to_team: true in .svc.yaml,
                               else it is suggested and the engram stays here). A team
                               scope (group:, org:) of the project's hub is written there
                               (5 s; queued in the outbox when the hub does not answer)
    --tags a,b,c               comma-separated tags
    --rationale <text>         why it holds (searched too)
    --source <text>            where it came from
    --supersedes id1,id2       engrams this one replaces
    --visibility <v>           private (default), public, template
    --abstract <ABS-id>        abstraction this engram instantiates
    --derived-from <id>        parent engram
    --knowledge-anchors <json> array of {"path", "relevance", "snippet"}
    --dual-coding <json>       {"example": "...", "analogy": "..."}`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    type: { type: 'string' },
    domain: { type: 'string' },
    scope: { type: 'string' },
    tags: { type: 'string' },
    rationale: { type: 'string' },
    source: { type: 'string' },
    supersedes: { type: 'string' },
    visibility: { type: 'string' },
    abstract: { type: 'string' },
    derivedFrom: { type: 'string' },
    knowledgeAnchors: { type: 'string' },
    dualCoding: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  const anchors = parseJsonFlag(f.knowledgeAnchors, 'knowledge-anchors');
  const dual = parseJsonFlag(f.dualCoding, 'dual-coding');
  if (f.scope !== undefined) {
    const bad = checkScope(f.scope);
    if (bad) throw invalid(bad);
  }
  const statement = await textArgument(cli.input, 'the statement', MAX_STATEMENT_CHARS);
  const project = await loadProjectConfig(process.cwd());
  const remote = remoteOf(project);

  const store = await openStore(f, 'fast', out);
  try {
    const startedAt = Date.now();
    // Where it goes (engine/remote/team-learn.ts, shared with svc_learn); the routing and the
    // hub's write path load only when a learn needs them.
    const given = f.scope ?? project?.scope;
    const teamLearn = given === undefined || remote ? await import('../../engine/remote/team-learn.js') : undefined;
    const { scope, routed, suggested } =
      given === undefined && teamLearn
        ? await teamLearn.routeLearn(store, statement, {
            ...(f.domain ? { domain: f.domain } : {}),
            team: await (await import('../team-memory.js')).teamSource(store.root, process.cwd(), project),
            storeRoot: store.root,
            remote,
            routeToTeam: project?.route_to_team === true,
          })
        : { scope: given, routed: undefined, suggested: undefined };
    const routedLine = routed ? `\nRouted to ${String(routed.scope)}: ${String(routed.reason)}` : '';
    const body = {
      statement,
      scope,
      ...(f.type ? { type: f.type } : {}),
      ...((f.domain ?? project?.domain) ? { domain: f.domain ?? project?.domain } : {}),
      ...(f.tags ? { tags: splitList(f.tags) } : {}),
      ...(f.rationale ? { rationale: f.rationale } : {}),
      ...(f.source ? { source: f.source } : {}),
      ...(f.supersedes ? { supersedes: splitList(f.supersedes, 'supersedes') } : {}),
      ...(f.visibility ? { visibility: f.visibility } : {}),
    };
    const r = teamLearn ? await teamLearn.learnOnHubIfTeam(store.root, remote, body, startedAt) : null;
    if (r && remote && scope) {
      const teamWrites = await import('../../engine/remote/team-writes.js');
      if (r.outcome === 'queued') {
        out.warn(
          `${r.error}; queued in the outbox (your recall and list show it, marked [queued]), sent once the hub answers again (svc sync sends it now)`,
        );
        out.result({ queued: true, hub: remote.url, scope, outbox_key: r.entry.key, ...(routed ? { routed } : {}) }, () =>
          out.quiet ? r.entry.key : `Queued for ${scope} on the hub${routedLine}`,
        );
        return 0;
      }
      const e = r.engram as { id: string; type: string; scope: string };
      if (r.flushed && (r.flushed.pending || r.flushed.refused)) out.warn(teamWrites.flushLine(r.flushed));
      const sentLine = r.flushed ? `\n${teamWrites.flushLine(r.flushed)}` : '';
      out.result({ ...r.engram, hub: remote.url, ...(routed ? { routed } : {}), ...(r.flushed ? { outbox: r.flushed } : {}) }, () =>
        out.quiet ? e.id : `Learned ${e.id} (${e.type}, scope ${e.scope}) on the hub ${remote.url}${routedLine}${sentLine}`,
      );
      return 0;
    }
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: false });
    const result = await learn(
      store,
      {
        statement,
        type: f.type as EngramType | undefined,
        scope,
        domain: f.domain ?? project?.domain,
        tags: splitList(f.tags),
        rationale: f.rationale,
        source: f.source,
        supersedes: splitList(f.supersedes, 'supersedes'),
        visibility: f.visibility as Visibility | undefined,
        abstract: f.abstract,
        derived_from: f.derivedFrom,
        knowledge_anchors: anchors as KnowledgeAnchor[] | undefined,
        dual_coding: dual as DualCoding | undefined,
      },
      systemContext,
      { embedder },
    );
    for (const w of result.warnings) out.warn(w);
    const e = result.engram;
    const suggestedLine = suggested ? `\n${(await import('../../engine/ops/suggest-scope.js')).suggestionLine(e.id, suggested)}` : '';
    out.result({ ...learnSummary(result), ...(routed ? { routed } : {}), ...(suggested ? { suggested } : {}) }, () => {
      if (out.quiet) return e.id;
      const head =
        result.action === 'created'
          ? `Learned ${e.id} (${e.type}, scope ${e.scope})`
          : result.action === 'reactivated'
            ? `Reactivated ${e.id} (${e.type}, scope ${e.scope}): it had been retired`
            : `Already known as ${e.id} (${e.type}, scope ${e.scope}); reference count now ${e.reference_count}`;
      const rec = result.recurrences.length ? `\nAlso learned at other scopes: ${result.recurrences.join(', ')}` : '';
      return head + rec + routedLine + suggestedLine;
    });
    return 0;
  } finally {
    store.close();
  }
}
