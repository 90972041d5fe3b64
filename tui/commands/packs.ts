import { invalid } from '../../engine/errors.js';
import { ENGRAM_TYPES, type EngramType } from '../../engine/model/engram-schema.js';
import { checkScope } from '../../engine/model/scope.js';
import { systemContext } from '../../engine/ops/context.js';
import {
  exportPack,
  FilePackRegistry,
  installPack,
  listPacks,
  previewPack,
  uninstallPack,
  type PackConflict,
  type ScanFinding,
} from '../../engine/ops/packs.js';
import { makeOutput, openStore, parseArgs, splitList, type Output } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc packs list
    svc packs preview <dir>        (alias: inspect) engrams, integrity, security scan, conflicts; installs nothing
    svc packs install <dir>        verify integrity (a tampered pack is refused), scan, report conflicts, install
    svc packs uninstall <name>     (alias: remove) retire the pack's engrams (history kept)
    svc packs export <name> [flags]

  A pack is a folder: pack.yaml (name, version, description, creator, created_at, engram_count,
  integrity: sha256-<hex>) and engrams/<id>.yaml. Installed engrams get scope pack:<name>;
  engrams holding a secret go to scope local instead; engrams with prompt-injection text install
  as candidates (never injected until you run svc promote <id>).

  Export flags
    --output <dir>        folder to write (default ~/svc-packs/<name>)
    --domain <d>          only this domain and its sub-domains
    --scope <s>           only this scope
    --tags t1,t2          only engrams carrying one of these tags
    --type <t>            ${ENGRAM_TYPES.join(', ')}
    --description <text>  what the pack is for (written to pack.yaml)
    --creator <name>      who made it (default: your user name)

  Only engrams with visibility public or template are exported; private ones and engrams
  holding secrets are left out and reported.`;

const SUBCOMMANDS = ['list', 'preview', 'inspect', 'install', 'uninstall', 'remove', 'export'] as const;
const EXPORT_FLAGS = ['output', 'domain', 'scope', 'tags', 'type', 'description', 'creator'] as const;

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    output: { type: 'string' },
    domain: { type: 'string' },
    scope: { type: 'string' },
    tags: { type: 'string' },
    type: { type: 'string' },
    description: { type: 'string' },
    creator: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  const [sub, ...args] = cli.input;
  if (sub === undefined) throw invalid(`svc packs needs a subcommand: ${SUBCOMMANDS.join(', ')} (see svc packs --help)`);
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw invalid(`unknown packs subcommand "${sub}": use ${SUBCOMMANDS.join(', ')} (see svc packs --help)`);
  }
  if (sub !== 'export') {
    const misplaced = EXPORT_FLAGS.filter((k) => f[k] !== undefined);
    if (misplaced.length) throw invalid(`--${misplaced[0]} is a flag of svc packs export, not of svc packs ${sub}`);
  }
  const needs = (what: string, placeholder: string): string => {
    if (args.length === 0) throw invalid(`svc packs ${sub} needs ${what}: svc packs ${sub} <${placeholder}>`);
    if (args.length > 1) throw invalid(`svc packs ${sub} takes one <${placeholder}>, got ${args.length}: ${args.join(' ')}`);
    return args[0]!;
  };
  if (sub === 'list' && args.length) throw invalid(`svc packs list takes no arguments (got ${args.join(' ')})`);

  // Validate everything before the store is opened (or created).
  let target = '';
  if (sub === 'preview' || sub === 'inspect' || sub === 'install') target = needs('a pack folder', 'dir');
  if (sub === 'uninstall' || sub === 'remove' || sub === 'export') target = needs('a pack name', 'name');
  if (sub === 'export') {
    if (f.type !== undefined && !(ENGRAM_TYPES as readonly string[]).includes(f.type)) {
      throw invalid(`--type must be one of ${ENGRAM_TYPES.join(', ')} (got "${f.type}")`);
    }
    if (f.scope !== undefined) {
      const bad = checkScope(f.scope);
      if (bad) throw invalid(`--${bad}`);
    }
    for (const k of ['output', 'description', 'creator', 'domain'] as const) {
      if (f[k] !== undefined && f[k]!.trim() === '') throw invalid(`--${k} must not be empty`);
    }
  }

  const store = await openStore(f, 'full', out);
  try {
    const registry = new FilePackRegistry(store.root);
    switch (sub) {
      case 'list': {
        const r = await listPacks(registry);
        for (const w of r.warnings) out.warn(w);
        out.result(r, () =>
          r.packs.length
            ? r.packs
                .map((p) => `${p.name}  v${p.version}  ${p.engram_count} engram(s)  installed ${p.installed_at}${p.description ? `\n    ${p.description}` : ''}`)
                .join('\n')
            : 'No packs installed.',
        );
        return 0;
      }
      case 'preview':
      case 'inspect': {
        const r = await previewPack(store, registry, target);
        if (!r.integrity.ok) out.warn(r.warnings[0]!);
        else warnInJson(out, r.warnings);
        out.result(r, () => {
          const m = r.manifest;
          const lines = [
            `Pack ${m.name} v${m.version}${m.creator ? ` by ${m.creator}` : ''}${m.created_at ? `, created ${m.created_at}` : ''}`,
            ...(m.description ? [`  ${m.description}`] : []),
            `Path        ${r.path}`,
            r.integrity.ok ? `Integrity   verified (${m.integrity})` : `Integrity   FAILED: ${r.integrity.problems.join('; ')}`,
            `Installed   ${r.installed ? `v${r.installed.version} (${r.installed.engram_count} engram(s), ${r.installed.installed_at})` : 'no'}`,
            `Engrams (${r.engrams.length}):`,
            ...r.engrams.map((e) => `  ${e.id}  [${[e.type, e.domain, e.polarity].filter(Boolean).join(' · ')}]\n      ${e.statement}`),
            r.findings.length ? `Security scan: ${r.findings.length} finding(s):` : 'Security scan: no findings',
            ...r.findings.map(findingLine),
            r.conflicts.length ? `Conflicts with this store: ${r.conflicts.length}:` : 'Conflicts with this store: none',
            ...r.conflicts.map(conflictLine),
          ];
          return lines.join('\n');
        });
        return 0;
      }
      case 'install': {
        const r = await installPack(store, registry, target, systemContext);
        warnInJson(out, r.warnings);
        out.result(r, () => {
          const total = r.created.length + r.updated.length + r.unchanged.length;
          const lines = [
            `${r.action === 'installed' ? 'Installed' : r.previous_version === r.version ? 'Reinstalled' : 'Updated'} pack ${r.name} v${r.version}${r.previous_version !== null && r.previous_version !== r.version ? ` (was v${r.previous_version})` : ''}: ` +
              `${total} engram(s) in scope pack:${r.name} (${r.created.length} new, ${r.updated.length} updated, ${r.unchanged.length} unchanged)`,
          ];
          if (r.retired.length) lines.push(`Retired ${r.retired.length} engram(s) this version dropped: ${r.retired.join(', ')}`);
          if (r.skipped.length) lines.push(`Skipped ${r.skipped.length}: ${r.skipped.map((s) => `${s.id} (${s.reason})`).join(', ')}`);
          if (r.findings.length) lines.push(`Security scan: ${r.findings.length} finding(s):`, ...r.findings.map(findingLine));
          if (r.demoted.length) lines.push(`Holding a secret, kept in scope local: ${r.demoted.join(', ')}`);
          if (r.candidates.length) lines.push(`Prompt-injection text, installed as candidates (read, then svc promote <id>): ${r.candidates.join(', ')}`);
          const reported = r.conflicts.filter((c) => c.kind === 'duplicate' || c.kind === 'contradiction');
          if (reported.length) lines.push(`Conflicts with existing engrams: ${reported.length}`, ...reported.map(conflictLine));
          return lines.join('\n');
        });
        return 0;
      }
      case 'uninstall':
      case 'remove': {
        const r = await uninstallPack(store, registry, target, systemContext);
        out.result(r, () => `Uninstalled pack ${r.name}${r.version !== null ? ` v${r.version}` : ''}: retired ${r.retired.length} engram(s) (history kept)`);
        return 0;
      }
      case 'export': {
        const r = await exportPack(
          store,
          {
            name: target,
            domain: f.domain,
            scope: f.scope,
            tags: splitList(f.tags),
            type: f.type as EngramType | undefined,
            description: f.description,
            creator: f.creator,
            output: f.output,
          },
          systemContext,
        );
        warnInJson(out, r.warnings);
        out.result(r, () => {
          const lines = [`Exported pack ${r.name} v${r.version}: ${r.engram_count} engram(s) to ${r.path}`, `Integrity   ${r.integrity}`];
          if (r.left_out.length) lines.push(`Left out ${r.left_out.length}: ${r.left_out_counts.private} private, ${r.left_out_counts.secret} holding a secret`);
          lines.push(...r.warnings.map((w) => `  ${w}`));
          return lines.join('\n');
        });
        return 0;
      }
    }
    return 1;
  } finally {
    store.close();
  }
}

/** The text report holds every warning; in JSON mode they also go to stderr, for the person at the terminal. */
function warnInJson(out: Output, warnings: string[]): void {
  if (out.json) for (const w of warnings) out.warn(w);
}

function findingLine(f: ScanFinding): string {
  return `  ${f.id}  ${f.kind}: ${f.rule} in ${f.field} (${f.sample})`;
}

function conflictLine(c: PackConflict): string {
  switch (c.kind) {
    case 'duplicate':
      return `  ${c.id} duplicates ${c.existing} (${c.existing_scope}): "${c.statement}"`;
    case 'contradiction':
      return `  ${c.id} contradicts ${c.existing} (${c.existing_scope}): "${c.statement}" vs "${c.existing_statement}"`;
    case 'id_taken':
      return `  ${c.id} id already used in this store by ${c.existing_scope}`;
    default:
      return `  ${c.id} repeats ${c.existing} within the pack`;
  }
}

