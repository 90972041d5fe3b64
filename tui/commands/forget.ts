import { forget } from '../../engine/ops/forget.js';
import { systemContext } from '../../engine/ops/context.js';
import { engramLine } from '../format.js';
import { engramSummary } from '../../engine/ops/result-json.js';
import { makeOutput, openStore, parseArgs, textArgument } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc forget <id-or-text> [--search] [--reason <r>]

  An ENG-, ABS- or META- id is retired directly. Other text is searched: one match is
  retired, several are listed (exit 1) so you can pick an id.

  Flags
    --search      search even if the argument looks like an id
    --reason <r>  why, kept with the engram`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { search: { type: 'boolean', default: false }, reason: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const target = await textArgument(cli.input, 'the id or text to forget');
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const r = await forget(store, { target, search: cli.flags.search, reason: cli.flags.reason }, systemContext);
    if (r.action === 'ambiguous') {
      out.result(
        { action: r.action, matches: r.matches.map(engramSummary) },
        () => `${r.matches.length} engrams match; run svc forget <id> with one of:\n` + r.matches.map(engramLine).join('\n'),
      );
      return 1;
    }
    out.result({ action: r.action, id: r.engram.id, status: r.engram.status }, () =>
      r.action === 'retired' ? `Retired ${r.engram.id}` : `${r.engram.id} was already retired`,
    );
    return 0;
  } finally {
    store.close();
  }
}
