import { SvcError } from '../../engine/errors.js';
import { similaritySearch } from '../../engine/ops/similarity.js';
import { DEFAULT_RECALL_LIMIT } from '../../engine/ops/recall.js';
import { engramSummary } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, positiveInt, textArgument } from '../../engine/cli/cli-kit.js';
import { embedderFor } from '../embedding.js';

const HELP = `
  Usage
    svc similarity-search <text> [--limit n] [--scope s]

  Raw embedding cosine of <text> against each engram. Reading: above 0.9 duplicate,
  0.7 to 0.9 related, below 0.7 new. Needs the embedding model. Exit code 2 when nothing matches.

  Flags
    --limit <n>   results (default ${DEFAULT_RECALL_LIMIT})
    --scope <s>   only this scope`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { limit: { type: 'number' }, scope: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const limit = positiveInt(cli.flags.limit, 'limit', DEFAULT_RECALL_LIMIT);
  const text = await textArgument(cli.input, 'the text to compare');
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const state = await embedderFor(store, out, { fast: false, download: true, warn: false });
    if (state?.state !== 'ready') {
      throw new SvcError('storage', `similarity search needs the embedding model: ${state?.reason ?? 'unavailable'}`);
    }
    const hits = await similaritySearch(store, state.embedder, text, { limit, scope: cli.flags.scope });
    const results = hits.map((h) => ({ ...engramSummary(h.engram), cosine: h.cosine, reading: h.reading }));
    if (results.length === 0) {
      if (out.json) out.result({ query: text, model: state.model, results }, () => '');
      throw new SvcError('no_results', `no engram to compare "${text}" with`);
    }
    out.result({ query: text, model: state.model, results }, () =>
      hits.map((h) => `${h.cosine.toFixed(4)}  ${h.reading.padEnd(9)}  ${h.engram.id}  ${h.engram.statement}`).join('\n'),
    );
    return 0;
  } finally {
    store.close();
  }
}
