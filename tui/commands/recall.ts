import { SvcError } from '../../engine/errors.js';
import { DEFAULT_RECALL_LIMIT, recall } from '../../engine/ops/recall.js';
import { engramLine } from '../format.js';
import { recallHitJson } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, positiveInt, textArgument } from '../../engine/cli/cli-kit.js';
import { QUERY_MAX } from '../../engine/search/query-limits.js';
import { embedderFor } from '../embedding.js';
import { teamSource, warnSources } from '../team-memory.js';
import { rerankerSetting } from '../../engine/rerank/reranker.js';

const HELP = `
  Usage
    svc recall <query> [--limit n] [--fast]

  Hybrid search: BM25 and embeddings fused by reciprocal rank fusion, then shaped by feedback,
  decay and pinning. The first hybrid call downloads the embedding model into <store>/models;
  without it recall runs BM25 and says so.

  Flags
    --limit <n>   results to return (default ${DEFAULT_RECALL_LIMIT})
    --fast        BM25 only

  With SVC_RERANKER set (see svc rerank-eval), the top hits are reranked by that model.

  Exit code 2 when nothing matches.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { limit: { type: 'number' } });
  const out = makeOutput(cli.flags);
  const limit = positiveInt(cli.flags.limit, 'limit', DEFAULT_RECALL_LIMIT);
  const query = await textArgument(cli.input, 'the query', QUERY_MAX);
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const embedder = await embedderFor(store, out, { fast: cli.flags.fast, download: true, warn: true });
    // SVC_RERANKER: recall reranks its head with that cross-encoder (not with --fast).
    const result = await recall(store, query, {
      limit,
      fast: cli.flags.fast,
      embedder,
      reranker: rerankerSetting(store.root),
      team: await teamSource(store.root),
    });
    warnSources(result.sources, out);
    const results = result.hits.map(recallHitJson);
    const body = {
      query,
      legs: result.legs,
      ...(result.reranker ? { reranker: result.reranker } : {}),
      ...(result.sources ? { sources: result.sources } : {}),
      results,
    };
    if (result.reranker?.state === 'unavailable') out.warn(`reranker not used: ${result.reranker.reason}`);
    if (results.length === 0) {
      if (out.json) out.result(body, () => '');
      throw new SvcError('no_results', `no engram matches "${query}"`);
    }
    out.result(body, () =>
      result.hits
        .map(
          (h, i) =>
            `${i + 1}. ${engramLine(h.engram)}${h.candidate ? '  (candidate)' : ''}${h.source === 'hub' ? '  [hub]' : h.source === 'both' ? '  [local + hub]' : h.source === 'outbox' ? '  [queued]' : ''}\n    score ${h.score} (${h.found_by.join(' + ')})`,
        )
        .join('\n'),
    );
    return 0;
  } finally {
    store.close();
  }
}
