import { DEFAULT_TIMELINE_LIMIT, timeline } from '../../engine/ops/episodes.js';
import { makeOutput, openStore, parseArgs, positiveInt } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc timeline [query] [flags]

  Episode history, newest first; with a query, best full-text match over summaries first.

  Flags
    --limit <n>      episodes (default ${DEFAULT_TIMELINE_LIMIT})
    --from <time>    at or after this date or ISO 8601 time
    --to <time>      at or before
    --agent <name>   only this agent
    --channel <c>    only this channel
    --session <id>   only this session`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    limit: { type: 'number' },
    from: { type: 'string' },
    to: { type: 'string' },
    agent: { type: 'string' },
    channel: { type: 'string' },
    session: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  const limit = positiveInt(f.limit, 'limit', DEFAULT_TIMELINE_LIMIT);
  const store = await openStore(f, 'fast', out);
  try {
    const query = cli.input.join(' ').trim() || undefined;
    const episodes = await timeline(store, {
      query,
      limit,
      from: f.from,
      to: f.to,
      agent: f.agent,
      channel: f.channel,
      session: f.session,
    });
    out.result({ count: episodes.length, episodes }, () =>
      episodes.length
        ? episodes.map((e) => `${e.at}  ${e.agent}${e.channel ? `/${e.channel}` : ''}  ${e.summary}`).join('\n')
        : 'No episodes.',
    );
    return 0;
  } finally {
    store.close();
  }
}
