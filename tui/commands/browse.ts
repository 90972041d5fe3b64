import { invalid } from '../../engine/errors.js';
import { parseArgs } from '../../engine/cli/cli-kit.js';
import { existingStoreRoot } from '../../engine/svc-home.js';
import { isTerminal } from '../../engine/cli/std-write.js';

// `svc browse` (and bare `svc` on a terminal): the interactive browser. Ink and React load
// only here, through tui/browse/run.ts.

const HELP = `
  Usage
    svc browse [--path <dir>]
    svc                      (no arguments, on a terminal)

  An interactive browser of the store: the engram list with filters and search as you
  type, every field of an engram, forget / promote / pin / feedback, the episode timeline
  and the tensions. Press ? inside for the keys, q or Ctrl-C to quit.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {});
  if (cli.input.length > 0) throw invalid(`svc browse takes no arguments (got "${cli.input.join(' ')}")`);
  if (cli.flags.json) throw invalid('svc browse is interactive and has no --json output (try svc list --json)');
  if (!isTerminal(0) || !isTerminal(1)) {
    throw invalid('svc browse needs an interactive terminal (stdin and stdout must be a TTY); try svc list');
  }
  const { runBrowser } = await import('../browse/run.js');
  return runBrowser(existingStoreRoot(cli.flags.path));
}
