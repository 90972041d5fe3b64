import { invalid } from '../../engine/errors.js';
import { IMPORT_SOURCES, importIntoStore, type ImportReport } from '../../engine/ops/import/import.js';
import { systemContext } from '../../engine/ops/context.js';
import { loadProjectConfig } from '../../engine/config/project-config.js';
import { checkScope } from '../../engine/model/scope.js';
import { resolveStoreRoot } from '../../engine/svc-home.js';
import { makeOutput, parseArgs } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc import --from <source> --path <file> [flags]

  Migrates memories from another system through the same path as learn (content-hash dedup and
  the secret guard apply). For this command --path is the INPUT file; --store picks the store.

  Sources (--from)
    generic        JSON array, JSON Lines or CSV/TSV (by extension); optional --mapping
    mem0-json      mem0 memory export: {"results": [{"id", "memory", ...}]} or the bare list
    mem0-sqlite    mem0's SQLite history database (e.g. ~/.mem0/history.db)

  Flags
    --from <source>     required: ${IMPORT_SOURCES.join(', ')}
    --path <file>       required: the file to import
    --dry-run           check and report, write nothing
    --scope <s>         put every row in this scope (default: the row's own, else .svc.yaml, else global)
    --mapping <file>    for generic: JSON {"fields": {engram field: source column}, "defaults": {...}}
    --store <dir>       store folder (default $SVC_PATH, else ~/.svc)

  The report counts imported, skipped (already there, or deleted in the source), conflict (same
  statement retired at the scope, or stored there with another type) and error rows, and names
  every row that was not imported. Exit code 1 when any row is an error.`;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    from: { type: 'string' },
    dryRun: { type: 'boolean', default: false },
    scope: { type: 'string' },
    mapping: { type: 'string' },
    store: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  if (f.from === undefined) throw invalid(`--from is required: one of ${IMPORT_SOURCES.join(', ')}`);
  if (!(IMPORT_SOURCES as readonly string[]).includes(f.from))
    throw invalid(`--from must be one of ${IMPORT_SOURCES.join(', ')} (got "${f.from}")`);
  if (cli.input.length > 1) throw invalid(`unexpected arguments: ${cli.input.join(' ')} (give the input file with --path)`);
  const path = f.path ?? cli.input[0];
  if (path === undefined || path.trim() === '')
    throw invalid('--path is required: the file to import (for import, --path is the input; --store picks the store)');
  if (f.scope !== undefined) {
    const bad = checkScope(f.scope);
    if (bad) throw invalid(bad);
  }
  if (f.store !== undefined && f.store.trim() === '') throw invalid('--store must name a folder');
  const project = f.scope === undefined ? await loadProjectConfig(process.cwd()) : null;

  const root = resolveStoreRoot(f.store);
  const { report, warnings } = await importIntoStore(
    root,
    {
      from: f.from,
      path,
      dryRun: f.dryRun === true,
      scope: f.scope,
      mapping: f.mapping,
      project: { scope: project?.scope, domain: project?.domain },
    },
    systemContext,
  );
  for (const w of warnings) out.warn(w);
  for (const d of report.demoted) out.warn(`${d.at}: ${d.reason}`);
  out.result({ ...report, store: root }, () => reportText(report, root, out.quiet));
  if (report.error > 0) {
    const first = report.rows
      .filter((r) => r.status === 'error')
      .slice(0, 3)
      .map((r) => `${r.at}: ${r.reason}`);
    const message = `${report.error} of ${report.total} rows could not be imported`;
    process.stderr.write(
      out.json
        ? JSON.stringify({ error: { kind: 'invalid', message, details: first } }) + '\n'
        : `svc: ${message}: ${first.join('; ')}${report.error > first.length ? '; ...' : ''}\n`,
    );
    return 1;
  }
  return 0;
}

const LISTED = 20;

function reportText(r: ImportReport, root: string, quiet: boolean): string {
  const what = r.format ? `${r.from}, ${r.format}` : r.from;
  const head = r.dry_run
    ? `Dry run: would import ${r.imported} of ${r.total} rows from ${r.path} (${what}) into ${root}; nothing was written.`
    : `Imported ${r.imported} of ${r.total} rows from ${r.path} (${what}) into ${root}.`;
  const counts = `  imported ${r.imported} · skipped ${r.skipped} · conflict ${r.conflict} · error ${r.error}  (${r.elapsed_ms} ms)`;
  if (quiet) return `${r.imported} imported, ${r.skipped} skipped, ${r.conflict} conflict, ${r.error} error`;
  const lines = [head, counts];
  for (const status of ['error', 'conflict', 'skipped'] as const) {
    const rows = r.rows.filter((x) => x.status === status);
    if (rows.length === 0) continue;
    lines.push(`${status === 'error' ? 'Errors' : status === 'conflict' ? 'Conflicts' : 'Skipped'}:`);
    for (const x of rows.slice(0, LISTED)) lines.push(`  ${x.at}: ${x.reason}`);
    if (rows.length > LISTED) lines.push(`  ... and ${rows.length - LISTED} more (see --json)`);
  }
  if (r.demoted.length) {
    lines.push('Moved to a private scope (looks like a secret):');
    for (const d of r.demoted.slice(0, LISTED)) lines.push(`  ${d.at}${d.engram ? ` -> ${d.engram}` : ''} in scope ${d.scope}`);
    if (r.demoted.length > LISTED) lines.push(`  ... and ${r.demoted.length - LISTED} more (see --json)`);
  }
  return lines.join('\n');
}
