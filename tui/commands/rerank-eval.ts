import { invalid } from '../../engine/errors.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';
import { DEFAULT_SAMPLE, EVAL_THRESHOLDS, rerankEval, type RerankEvalReport } from '../../engine/ops/rerank-eval.js';
import {
  parseRerankerName,
  RERANK_DEPTH,
  RERANKER_MODELS,
  RERANKERS,
  rerankerFolder,
  rerankerPresent,
  selectedReranker,
  type RerankerName,
} from '../../engine/rerank/reranker.js';
import { embedderFor } from '../embedding.js';

const t = EVAL_THRESHOLDS;
const HELP = `
  Usage
    svc rerank-eval [--reranker <name>] [--sample N] [--seed N] [--force]

  Advisory reranker gate. Samples the store's engrams, makes a probe query from each (its rarest
  content words; the engram is the expected answer), ranks the top ${RERANK_DEPTH} candidates with
  recall (BM25 and vectors fused by RRF) and again with the reranker, and compares them: MRR,
  Hit@1, promotions and demotions of the expected engram, latency per probe.

  Verdict: fewer than ${t.min_probes} probes -> insufficient-data; MRR change above +${t.helpful_delta_mrr} -> helpful;
  below ${t.harmful_delta_mrr} -> harmful (exit code 1); in between -> insufficient-data (no effect shown).
  The verdict is cached in <store>/models/rerank-eval.json and reused for ${t.max_age_days} days unless the
  number of engrams moves by more than ${t.max_store_drift * 100}%.

  Rerankers (placed by hand, never downloaded): a folder <store>/models/reranker-<name>/ holding
  model.onnx and tokenizer.json. SVC_RERANKER=<name> makes recall rerank its top candidates.

  Flags
    --reranker <name>   ${RERANKER_MODELS.join(' (quality tier), ')} (tiny tier);
                        default: $SVC_RERANKER, else the one installed (quality tier first)
    --sample <N>        engrams to probe (default ${DEFAULT_SAMPLE})
    --seed <N>          seed of the sample, for a repeatable run (default random, reported)
    --force             evaluate again even when a cached verdict is fresh
    --fast              baseline BM25 only`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    reranker: { type: 'string' },
    sample: { type: 'number' },
    seed: { type: 'number' },
    force: { type: 'boolean', default: false },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  if (cli.input.length) throw invalid('rerank-eval takes no arguments (see --help)');
  const sample = positiveInt(f.sample, 'sample', DEFAULT_SAMPLE);
  if (f.seed !== undefined && (!Number.isInteger(f.seed) || f.seed < 0)) throw invalid('--seed must be a whole number from 0');

  const store = await openStore(f, 'fast', out);
  try {
    const reranker = chooseReranker(f.reranker, store.root);
    const embedder = await embedderFor(store, out, { fast: f.fast, download: false, warn: true });
    const report = await rerankEval(store, {
      storeRoot: store.root,
      reranker,
      sample: f.sample === undefined ? undefined : sample,
      seed: f.seed,
      force: f.force,
      fast: f.fast,
      embedder,
    });
    out.result(report, () => (out.quiet ? report.verdict : describe(report)));
    return report.verdict === 'harmful' ? 1 : 0;
  } finally {
    store.close();
  }
}

function chooseReranker(flag: string | undefined, root: string): RerankerName {
  if (flag !== undefined) return parseRerankerName(flag);
  const fromEnv = selectedReranker();
  if (fromEnv) return fromEnv;
  const installed = RERANKER_MODELS.find((name) => rerankerPresent(root, name));
  if (installed) return installed;
  const where = RERANKER_MODELS.map(
    (name) => `${rerankerFolder(root, name)} (${name}, ${RERANKERS[name].tier} tier: ${RERANKERS[name].source})`,
  );
  throw invalid(
    `no reranker is installed: place model.onnx and tokenizer.json in ${where.join(', or in ')}; or name one with --reranker or SVC_RERANKER`,
  );
}

function describe(r: RerankEvalReport): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const lines = [
    `verdict: ${r.verdict} (${r.reason})${r.cached ? `, cached from ${r.evaluated_at}` : ''}`,
    `reranker ${r.reranker} (${r.tier} tier) vs recall (${r.mode === 'hybrid' ? 'BM25 + vectors, RRF' : 'BM25 only'}), top ${r.depth} candidates`,
    `probes ${r.probes} of ${r.store_engrams} engrams (sample ${r.sample}, seed ${r.seed}${r.passed_over ? `, ${r.passed_over} too short` : ''})`,
    `MRR      ${r.baseline.mrr.toFixed(4)} -> ${r.reranked.mrr.toFixed(4)} (delta ${r.delta_mrr >= 0 ? '+' : ''}${r.delta_mrr.toFixed(4)})`,
    `Hit@1    ${pct(r.baseline.hit_at_1)} -> ${pct(r.reranked.hit_at_1)}`,
    `moved    ${r.promotions} up, ${r.demotions} down, ${r.unchanged} unchanged (${r.baseline.found} found by recall)`,
    `latency  rerank p50 ${r.latency_ms.rerank.p50} ms, p95 ${r.latency_ms.rerank.p95} ms; recall p50 ${r.latency_ms.recall.p50} ms`,
  ];
  return lines.join('\n');
}
