import { inject } from '../../engine/ops/inject.js';
import { checkBudget, DEFAULT_INJECT_BUDGET } from '../../engine/ops/inject-budget.js';
import { recordInjection } from '../../engine/ops/history.js';
import { makeOutput, openStore, parseArgs, textArgument } from '../../engine/cli/cli-kit.js';
import { TASK_MAX } from '../../engine/search/query-limits.js';
import { embedderFor } from '../embedding.js';
import { teamSource, warnSources } from '../team-memory.js';
import { rerankerSetting } from '../../engine/rerank/reranker.js';

const HELP = `
  Usage
    svc inject <task> [--budget n] [--no-with-default-protocol] [--fast]

  Prints what an agent should know before the task, within a token budget, as blocks
  ## DIRECTIVES, ## CONSTRAINTS (prohibitions) and ## ALSO CONSIDER, followed by the
  Learning Protocol. Pinned engrams always qualify.

  Flags
    --budget <n>                  token budget (default ${DEFAULT_INJECT_BUDGET})
    --no-with-default-protocol    leave out the Learning Protocol block
    --fast                        BM25 only`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    budget: { type: 'number' },
    withDefaultProtocol: { type: 'boolean', default: true },
  });
  const out = makeOutput(cli.flags);
  const budget = checkBudget(cli.flags.budget ?? DEFAULT_INJECT_BUDGET, '--budget');
  const task = await textArgument(cli.input, 'the task', TASK_MAX);
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const embedder = await embedderFor(store, out, { fast: cli.flags.fast, download: true, warn: true });
    const result = await inject(store, task, {
      budget,
      withProtocol: cli.flags.withDefaultProtocol,
      fast: cli.flags.fast,
      embedder,
      reranker: rerankerSetting(store.root),
      team: await teamSource(store.root),
    });
    warnSources(result.sources, out);
    // Bookkeeping: a store that cannot be written here still answers.
    if (!store.readOnly) await recordInjection(store, result, { agent: 'cli', at: new Date() });
    out.result(result, () => result.text);
    return 0;
  } finally {
    store.close();
  }
}
