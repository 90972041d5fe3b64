import { batchDecay } from '../../engine/ops/decay.js';
import { systemContext } from '../../engine/ops/context.js';
import { makeOutput, openStore, parseArgs } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc batch-decay [--context-scope <scope>]

  Applies ACT-R decay to every local engram: retrieval strength falls with the days since
  last use; active engrams that fall below 0.2 become dormant. Pinned engrams are kept.

  Flags
    --context-scope <scope>   leave this scope (the active project) untouched`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { contextScope: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const store = await openStore(cli.flags, 'full', out, { span: 'writable' });
  try {
    const report = await batchDecay(store, { contextScope: cli.flags.contextScope }, systemContext);
    out.result(report, () =>
      [
        `Processed ${report.processed}, decayed ${report.decayed}, skipped ${report.skipped}`,
        ...report.transitions.map((t) => `  ${t.id}: ${t.from} -> ${t.to} (retrieval strength ${t.retrieval_strength})`),
      ].join('\n'),
    );
    return 0;
  } finally {
    store.close();
  }
}
