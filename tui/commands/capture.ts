import { capture } from '../../engine/ops/episodes.js';
import { systemContext } from '../../engine/ops/context.js';
import { makeOutput, openStore, parseArgs, textArgument } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc capture <summary> [--agent name] [--session id] [--channel c]
    echo "<summary>" | svc capture

  Records an episode: what happened, when, by whom.

  Flags
    --agent <name>   who did it (default cli)
    --session <id>   the session it belongs to
    --channel <c>    a free label, e.g. tool, correction, review`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { agent: { type: 'string' }, session: { type: 'string' }, channel: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const summary = await textArgument(cli.input, 'the summary');
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const ep = await capture(
      store,
      { summary, agent: cli.flags.agent, session: cli.flags.session, channel: cli.flags.channel },
      systemContext,
    );
    out.result(ep, () => `Captured ${ep.id} (${ep.agent}, ${ep.at})`);
    return 0;
  } finally {
    store.close();
  }
}
