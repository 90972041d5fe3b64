import { invalid } from '../../engine/errors.js';
import { promote } from '../../engine/ops/promote.js';
import { systemContext } from '../../engine/ops/context.js';
import { makeOutput, openStore, parseArgs } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc promote <id>

  Moves a candidate engram to active and resets its activation. Retired engrams cannot be promoted.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {});
  const out = makeOutput(cli.flags);
  if (cli.input.length !== 1) throw invalid('usage: svc promote <id> (one id at a time)');
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const e = await promote(store, cli.input[0]!, systemContext);
    out.result({ id: e.id, status: e.status, activation: e.activation }, () => `Promoted ${e.id} to active`);
    return 0;
  } finally {
    store.close();
  }
}
