import { invalid } from '../../engine/errors.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { migrateDown, migrateUp, storeVersionStatus, type MigrationRun } from '../../engine/store/migrations.js';

const HELP = `
  Usage
    svc migrate [up]              apply pending store migrations
    svc migrate status            current vs latest store version, and what is pending
    svc migrate down <version>    roll back to an earlier store version

  Before changing anything, up and down copy the store's tracked files (engrams, episodes,
  events, sessions, config) into <store>/backups/<timestamp>/ and print that path. The versions
  are described in migrations/store/README.md of the svc package.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {});
  const out = makeOutput(cli.flags);
  const [action = 'up', ...rest] = cli.input;
  const root = resolveStoreRoot(cli.flags.path);

  if (action === 'status') {
    if (rest.length) throw invalid('migrate status takes no arguments');
    const status = storeVersionStatus(root);
    out.result(status, () => {
      const lines = [`store ${root}: version ${status.current}, latest ${status.latest} (${status.state})`];
      for (const p of status.pending) lines.push(`  pending ${p.version} ${p.name}: ${p.description}`);
      if (status.message && !out.quiet) lines.push(status.message);
      return lines.join('\n');
    });
    return 0;
  }

  let result: MigrationRun;
  if (action === 'up') {
    if (rest.length) throw invalid('migrate up takes no arguments');
    result = await migrateUp(root);
  } else if (action === 'down') {
    if (rest.length !== 1 || !/^\d+$/.test(rest[0]!)) throw invalid('usage: svc migrate down <version> (a whole number, e.g. 1)');
    result = await migrateDown(root, Number(rest[0]));
  } else {
    throw invalid(`unknown migrate action "${action}" (status, up, down <version>)`);
  }

  for (const w of result.warnings) out.warn(w);
  out.result(result, () => {
    if (!result.backup) return `store ${root} is already at version ${result.to}: nothing to do`;
    const lines = [`backup: ${result.backup}`];
    for (const s of result.steps) {
      const skipped = s.skipped.length ? `, ${s.skipped.length} skipped` : '';
      lines.push(`  ${s.direction} ${s.version} ${s.name}: ${s.changed.length} file(s) changed${skipped}`);
    }
    lines.push(`migrated ${root} from version ${result.from} to ${result.to}`);
    return lines.join('\n');
  });
  return 0;
}
