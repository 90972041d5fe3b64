import { invalid } from '../../engine/errors.js';
import { learn } from '../../engine/ops/learn.js';
import { learnSummary } from '../../engine/ops/result-json.js';
import { systemContext } from '../../engine/ops/context.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { checkScope } from '../../engine/model/scope.js';
import type { DualCoding, EngramType, KnowledgeAnchor, Visibility } from '../../engine/model/engram-schema.js';
import { makeOutput, openStore, parseArgs, parseJsonFlag, splitList, textArgument } from '../../engine/cli/cli-kit.js';
import { embedderFor } from '../embedding.js';

const HELP = `
  Usage
    svc learn <statement> [flags]
    echo "<statement>" | svc learn [flags]

  Flags
    --type <t>                 behavioral (default), terminological, procedural, architectural
    --domain <d>               topic, a dotted path (default: .svc.yaml domain)
    --scope <s>                scope (default: .svc.yaml scope, else global)
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
  const statement = await textArgument(cli.input, 'the statement');
  const project = f.scope === undefined || f.domain === undefined ? await loadProjectConfig(process.cwd()) : null;

  const store = await openStore(f, 'fast', out);
  try {
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: false });
    const result = await learn(
      store,
      {
        statement,
        type: f.type as EngramType | undefined,
        scope: f.scope ?? project?.scope,
        domain: f.domain ?? project?.domain,
        tags: splitList(f.tags),
        rationale: f.rationale,
        source: f.source,
        supersedes: splitList(f.supersedes),
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
    out.result(learnSummary(result), () => {
        if (out.quiet) return e.id;
        const head =
          result.action === 'created'
            ? `Learned ${e.id} (${e.type}, scope ${e.scope})`
            : result.action === 'reactivated'
              ? `Reactivated ${e.id} (${e.type}, scope ${e.scope}): it had been retired`
              : `Already known as ${e.id} (${e.type}, scope ${e.scope}); reference count now ${e.reference_count}`;
        const rec = result.recurrences.length ? `\nAlso learned at other scopes: ${result.recurrences.join(', ')}` : '';
        return head + rec;
      });
    return 0;
  } finally {
    store.close();
  }
}
