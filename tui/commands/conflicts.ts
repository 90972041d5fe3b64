import { invalid } from '../../engine/errors.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';
import { existingStoreRoot } from '../../engine/svc-home.js';
import { systemContext } from '../../engine/ops/context.js';

const HELP = `
  Usage
    svc conflicts                          list what two machines changed differently
    svc conflicts show <id>                both versions of one conflict
    svc conflicts resolve <id> --keep current|other

  A sync merges what two machines changed: counters add up, lists unite. When both changed the
  same field of an engram differently (its statement, say), the engram keeps one value and the
  other machine's waits in a conflict record (conflicts/ in the store), which syncs like any
  file: every machine sees it, and any can resolve it. <id> is the record's id, or the engram's
  id when it has one open conflict. --keep current keeps what the engram holds now; --keep other
  takes the other machine's value. Counters and everything else merged stay as they are.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, { keep: { type: 'string' } });
  const out = makeOutput(cli.flags);
  const [sub = 'list', target, ...extra] = cli.input;
  if (extra.length) throw invalid('usage: svc conflicts [list | show <id> | resolve <id> --keep current|other]');
  const [{ LocalStore }, ops] = await Promise.all([
    import('../../engine/store/local-store.js'),
    import('../../engine/store/sync-resolve.js'),
  ]);
  const store = await LocalStore.open(existingStoreRoot(cli.flags.path), 'fast');
  try {
    for (const w of store.warnings.splice(0)) out.warn(w);
    if (sub === 'list') {
      if (target !== undefined) throw invalid('usage: svc conflicts [list]');
      const { conflicts, problems } = ops.listConflicts(store);
      for (const p of problems) out.warn(`unreadable conflict record ${p}`);
      const rows = conflicts.map(({ id, path, engram_id, fields, kept, other, detected_on, detected_at }) => ({
        id,
        path,
        engram_id,
        fields,
        kept,
        other,
        detected_on,
        detected_at,
      }));
      out.result({ count: rows.length, conflicts: rows }, () =>
        rows.length === 0
          ? 'No sync conflicts'
          : rows
              .map((c) => {
                const what = c.engram_id ? `engram ${c.engram_id} (${(c.fields ?? []).join(', ')})` : c.path;
                const detail = (c.fields ?? []).map((f) => `    ${f}: now ${show(c.kept?.[f])} | other ${show(c.other?.[f])}`);
                return [`${c.id}  ${what}  found by ${c.detected_on} at ${c.detected_at}`, ...detail].join('\n');
              })
              .join('\n') + '\n\nResolve each: svc conflicts resolve <id> --keep current|other',
      );
      return 0;
    }
    if (!target) throw invalid(`usage: svc conflicts ${sub} <id>`);
    if (sub === 'show') {
      const c = ops.findConflict(store, target);
      const { file: _f, ...record } = c;
      out.result(record, () =>
        [
          `${c.id}: ${c.engram_id ? `engram ${c.engram_id}` : c.path}, changed on two machines (found by ${c.detected_on} at ${c.detected_at}, other commit ${c.other_commit})`,
          ...(c.fields ?? []).flatMap((f) => [`  ${f}`, `    now:   ${show(c.kept?.[f])}`, `    other: ${show(c.other?.[f])}`]),
          ...(c.fields ? [] : ['  the other version is kept whole in the record']),
        ].join('\n'),
      );
      return 0;
    }
    if (sub === 'resolve') {
      if (cli.flags.keep !== 'current' && cli.flags.keep !== 'other')
        throw invalid("--keep must be current (what the engram holds now) or other (the other machine's value)");
      const r = await ops.resolveConflict(store, target, cli.flags.keep, systemContext);
      out.result(
        r,
        () =>
          `Resolved ${r.id}: kept the ${r.kept === 'current' ? 'current' : "other machine's"} version of ${r.path}; svc sync shares the choice`,
      );
      return 0;
    }
    throw invalid(`unknown conflicts subcommand "${sub}" (list, show, resolve)`);
  } finally {
    store.close();
  }
}

const show = (v: unknown): string => (v === undefined || v === null ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v));
