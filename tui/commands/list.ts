import { invalid } from '../../engine/errors.js';
import { ENGRAM_STATUSES, ENGRAM_TYPES } from '../../engine/model/engram-schema.js';
import { engramLine } from '../format.js';
import { engramSummary } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc list [flags]

  Flags
    --scope <s>    only this scope
    --domain <d>   only this domain and its sub-domains
    --type <t>     ${ENGRAM_TYPES.join(', ')}
    --status <s>   ${ENGRAM_STATUSES.join(', ')} (default: all but retired)
    --limit <n>    at most n engrams
    --meta         only META- engrams`;

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
    out.result({ count: engrams.length, engrams: engrams.map(engramSummary) }, () =>
      engrams.length ? engrams.map(engramLine).join('\n') : 'No engrams.',
    );
    return 0;
  } finally {
    store.close();
  }
}
