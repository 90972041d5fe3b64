import { invalid } from '../../engine/errors.js';
import { rescope } from '../../engine/ops/rescope.js';
import { systemContext } from '../../engine/ops/context.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { remoteOf } from '../../engine/remote/hub-client.js';
import { makeOutput, openStore, parseArgs } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc rescope <id> [<id> ...] --scope <scope> [--reason <text>]

  Moves engrams to another scope (kept in each engram's history). When the project names a hub
  (svc init-remote) and the scope is a team scope there (group:, org:, or one the hub lets you
  write), this publishes them: each is learned on the hub through the outbox, and the local copy
  is retired once the hub has it (while it waits in the outbox, the local copy stays). An engram
  that holds a secret never moves to a shared scope.

  Exit code 1 when any engram could not be moved.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { scope: { type: 'string' }, reason: { type: 'string' } });
  const out = makeOutput(cli.flags);
  if (cli.input.length === 0) throw invalid('usage: svc rescope <id> [<id> ...] --scope <scope>');
  if (!cli.flags.scope) throw invalid('--scope is required: the scope to move the engrams to');
  const remote = remoteOf(await loadProjectConfig(process.cwd()));
  const store = await openStore(cli.flags, 'fast', out);
  try {
    const hub = remote ? (await import('../../engine/remote/team-writes.js')).hubPublisher(store.root, remote) : undefined;
    const items = await rescope(store, cli.input, cli.flags.scope, systemContext, {
      ...(cli.flags.reason ? { reason: cli.flags.reason } : {}),
      ...(hub ? { hub } : {}),
    });
    const failed = items.filter((i) => i.outcome === 'refused' || i.outcome === 'not_found');
    for (const f of failed) out.warn(`${f.id}: ${f.detail}`);
    out.result({ scope: cli.flags.scope, items }, () =>
      items
        .map((i) =>
          i.outcome === 'moved'
            ? `Moved ${i.id} from ${i.from} to ${i.to}`
            : i.outcome === 'published'
              ? `Published ${i.id} to ${i.to} on the hub as ${i.hub_id}; the local copy is retired`
              : i.outcome === 'queued'
                ? `Queued ${i.id} for ${i.to} on the hub (${i.detail}); the local copy stays until it is delivered`
                : i.outcome === 'unchanged'
                  ? `${i.id} is already in ${i.to}`
                  : `Not moved: ${i.id}`,
        )
        .join('\n'),
    );
    return failed.length > 0 ? 1 : 0;
  } finally {
    store.close();
  }
}
