import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { invalid } from '../../engine/errors.js';
import { ENGRAM_TYPES, type EngramType } from '../../engine/model/engram-types.js';
import { checkScope } from '../../engine/model/scope.js';
import { systemContext } from '../../engine/ops/context.js';
import {
  exportPack,
  FilePackKeys,
  FilePackRegistry,
  installPack,
  listPacks,
  previewPack,
  uninstallPack,
  type PackConflict,
  type PackSignatureCheck,
  type ScanFinding,
} from '../../engine/ops/packs/packs.js';
import { MANIFEST_FILE, pathKind, peekManifest } from '../../engine/ops/packs/format.js';
import { KEY_PREFIX } from '../../engine/ops/packs/signing.js';
import { makeOutput, openStore, parseArgs, splitList, type Output } from '../../engine/cli/cli-kit.js';

const HELP = `
  Usage
    svc packs list                 installed packs (and installs that were interrupted)
    svc packs preview <dir>        (alias: inspect) engrams, integrity, signer, security scan, conflicts; installs nothing
    svc packs install <dir>        verify integrity and signature, scan, report conflicts, install
    svc packs uninstall <name>     (alias: remove) retire the pack's engrams (history kept)
    svc packs export <name> [flags]
    svc packs trust <public-key-or-file> [--label <name>]   trust a creator's key (a key, a key file, or a pack)
    svc packs trust --list         the keys you trust (yours first)
    svc packs trust --remove <public-key>

  A pack is a folder: pack.yaml (name, version, description, creator, created_at, engram_count,
  integrity: sha256-<hex>, signer and signature) and engrams/<id>.yaml. Exports are signed with
  this store's creator key (made on the first export, kept in pack-keys.yaml, never synced).
  Install refuses a pack whose integrity or signature check fails, and installs an unsigned
  pack or one signed by a key you do not trust only with --allow-untrusted. Installed engrams
  get ids of this store and scope pack:<name>; engrams holding a secret go to scope local
  instead; engrams with prompt-injection text or terminal control characters install as
  candidates (never injected until you run svc promote <id>). Links in a pack are refused.

  Install flags
    --allow-untrusted     install an unsigned pack, or one signed by a key you do not trust

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

const SUBCOMMANDS = ['list', 'preview', 'inspect', 'install', 'uninstall', 'remove', 'export', 'trust'] as const;
/** Flags that belong to one subcommand. */
const OWN_FLAGS = {
  export: ['output', 'domain', 'scope', 'tags', 'type', 'description', 'creator'],
  install: ['allowUntrusted'],
  trust: ['list', 'remove', 'label'],
} as const;
const flagName = (k: string): string => k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());

export async function run(argv: string[]): Promise<number> {
  const cli = parseArgs(argv, HELP, {
    output: { type: 'string' },
    domain: { type: 'string' },
    scope: { type: 'string' },
    tags: { type: 'string' },
    type: { type: 'string' },
    description: { type: 'string' },
    creator: { type: 'string' },
    allowUntrusted: { type: 'boolean' },
    list: { type: 'boolean' },
    remove: { type: 'string' },
    label: { type: 'string' },
  });
  const f = cli.flags;
  const out = makeOutput(f);
  const [sub, ...args] = cli.input;
  if (sub === undefined) throw invalid(`svc packs needs a subcommand: ${SUBCOMMANDS.join(', ')} (see svc packs --help)`);
  if (!(SUBCOMMANDS as readonly string[]).includes(sub)) {
    throw invalid(`unknown packs subcommand "${sub}": use ${SUBCOMMANDS.join(', ')} (see svc packs --help)`);
  }
  for (const [owner, flags] of Object.entries(OWN_FLAGS)) {
    if (owner === sub) continue;
    const misplaced = flags.filter((k) => f[k] !== undefined);
    if (misplaced.length) throw invalid(`--${flagName(misplaced[0]!)} is a flag of svc packs ${owner}, not of svc packs ${sub}`);
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
  if (sub === 'trust') {
    const modes = [args.length > 0, f.list === true, f.remove !== undefined].filter(Boolean).length;
    if (modes !== 1)
      throw invalid('svc packs trust takes one of: <public-key-or-file>, --list, --remove <public-key> (see svc packs --help)');
    if (args.length > 1) throw invalid(`svc packs trust takes one <public-key-or-file>, got ${args.length}: ${args.join(' ')}`);
    if (f.label !== undefined && (args.length === 0 || f.label.trim() === ''))
      throw invalid('--label names a key being trusted: svc packs trust <public-key-or-file> --label <name>');
    target = args[0] ?? '';
  }
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
    const keys = new FilePackKeys(store.root);
    switch (sub) {
      case 'list': {
        const r = await listPacks(registry);
        for (const w of r.warnings) out.warn(w);
        out.result(r, () =>
          r.packs.length
            ? r.packs
                .map((p) => {
                  const state =
                    p.state === 'installing'
                      ? `  INTERRUPTED install (started ${p.installed_at}): svc packs install ${p.source}, or svc packs uninstall ${p.name}`
                      : `  installed ${p.installed_at}`;
                  return `${p.name}  v${p.version}  ${p.engram_count} engram(s)${state}${p.description ? `\n    ${p.description}` : ''}`;
                })
                .join('\n')
            : 'No packs installed.',
        );
        return 0;
      }
      case 'preview':
      case 'inspect': {
        const r = await previewPack(store, registry, target, keys);
        if (!r.integrity.ok) out.warn(r.warnings[0]!);
        else warnInJson(out, r.warnings);
        out.result(r, () => {
          const m = r.manifest;
          const lines = [
            `Pack ${m.name} v${m.version}${m.creator ? ` by ${m.creator}` : ''}${m.created_at ? `, created ${m.created_at}` : ''}`,
            ...(m.description ? [`  ${m.description}`] : []),
            `Path        ${r.path}`,
            r.integrity.ok ? `Integrity   verified (${m.integrity})` : `Integrity   FAILED: ${r.integrity.problems.join('; ')}`,
            `Signature   ${signatureLine(r.signature)}`,
            `Installed   ${r.installed ? `v${r.installed.version} (${r.installed.engram_count} engram(s), ${r.installed.installed_at})${r.installed.state === 'installing' ? ', install interrupted' : ''}` : 'no'}`,
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
        const r = await installPack(store, registry, target, systemContext, { trust: keys, allowUntrusted: f.allowUntrusted === true });
        warnInJson(out, r.warnings);
        out.result(r, () => {
          const total = r.created.length + r.updated.length + r.unchanged.length;
          const lines = [
            `${r.action === 'installed' ? 'Installed' : r.previous_version === r.version ? 'Reinstalled' : 'Updated'} pack ${r.name} v${r.version}${r.previous_version !== null && r.previous_version !== r.version ? ` (was v${r.previous_version})` : ''}: ` +
              `${total} engram(s) in scope pack:${r.name} (${r.created.length} new, ${r.updated.length} updated, ${r.unchanged.length} unchanged)`,
            `Signature   ${r.signature.status === 'trusted' ? signatureLine(r.signature) : `${r.signature.status === 'unsigned' ? 'none (unsigned)' : `signed by ${r.signature.signer}, not trusted`}: installed because of --allow-untrusted`}`,
          ];
          if (r.retired.length) lines.push(`Retired ${r.retired.length} engram(s) this version dropped: ${r.retired.join(', ')}`);
          if (r.skipped.length) lines.push(`Skipped ${r.skipped.length}: ${r.skipped.map((s) => `${s.id} (${s.reason})`).join(', ')}`);
          if (r.findings.length) lines.push(`Security scan: ${r.findings.length} finding(s):`, ...r.findings.map(findingLine));
          if (r.demoted.length) lines.push(`Holding a secret, kept in scope local: ${r.demoted.join(', ')}`);
          if (r.candidates.length)
            lines.push(
              `Prompt-injection text or control characters, installed as candidates (read, then svc promote <id>): ${r.candidates.join(', ')}`,
            );
          const reported = r.conflicts.filter((c) => c.kind === 'duplicate' || c.kind === 'contradiction');
          if (reported.length) lines.push(`Conflicts with existing engrams: ${reported.length}`, ...reported.map(conflictLine));
          return lines.join('\n');
        });
        return 0;
      }
      case 'uninstall':
      case 'remove': {
        const r = await uninstallPack(store, registry, target, systemContext);
        out.result(
          r,
          () =>
            `Uninstalled pack ${r.name}${r.version !== null ? ` v${r.version}` : ''}: retired ${r.retired.length} engram(s) (history kept)`,
        );
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
          await keys.signer(),
        );
        warnInJson(out, r.warnings);
        out.result(r, () => {
          const lines = [
            `Exported pack ${r.name} v${r.version}: ${r.engram_count} engram(s) to ${r.path}`,
            `Integrity   ${r.integrity}`,
            `Signed by   ${r.signer} (this store's key)`,
          ];
          if (r.left_out.length)
            lines.push(`Left out ${r.left_out.length}: ${r.left_out_counts.private} private, ${r.left_out_counts.secret} holding a secret`);
          lines.push(...r.warnings.map((w) => `  ${w}`));
          return lines.join('\n');
        });
        return 0;
      }
      case 'trust': {
        if (f.list) {
          const trusted = await keys.trusted();
          out.result({ count: trusted.length, keys: trusted }, () =>
            trusted.length
              ? trusted.map((k) => `${k.key}  ${k.own ? 'you (the key this store signs its exports with)' : k.label}`).join('\n')
              : "No trusted keys yet: your own key is made on your first svc packs export; svc packs trust <public-key-or-file> adds a creator's.",
          );
          return 0;
        }
        if (f.remove !== undefined) {
          const r = await keys.untrust(f.remove.trim());
          out.result({ removed: r }, () => `No longer trusted: ${r.key} (${r.label})`);
          return 0;
        }
        const found = await keyFrom(target);
        const r = await keys.trust(found.key, f.label?.trim() || found.label, systemContext.now());
        out.result(r, () =>
          r.added
            ? `Trusted ${r.key} (${r.label}): packs it signs now install without --allow-untrusted`
            : `Already trusted: ${r.key} (${r.label})`,
        );
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

/** A public key given as itself, a file holding it, or a pack (folder or its pack.yaml) naming its signer. */
async function keyFrom(arg: string): Promise<{ key: string; label: string }> {
  if (arg.startsWith(KEY_PREFIX)) return { key: arg.trim(), label: 'trusted by hand' };
  const path = resolve(arg);
  const kind = pathKind(path);
  const packDir = kind === 'folder' ? path : kind === 'file' && basename(path) === MANIFEST_FILE ? dirname(path) : null;
  if (packDir) {
    const m = await peekManifest(packDir);
    if (typeof m?.signer !== 'string')
      throw invalid(
        `${arg} names no signer: the pack is not signed (or it is not a pack), so there is no key to trust: ask its creator for a signed copy or their public key`,
      );
    return {
      key: m.signer,
      label:
        typeof m.creator === 'string' && m.creator ? `creator of pack ${String(m.name)}: ${m.creator}` : `signer of pack ${String(m.name)}`,
    };
  }
  if (kind === 'file') {
    const line = readFileSync(path, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.startsWith(KEY_PREFIX));
    if (!line) throw invalid(`${arg} holds no public key (a line starting with ${KEY_PREFIX})`);
    return { key: line, label: `from ${basename(path)}` };
  }
  throw invalid(`"${arg}" is neither a public key (${KEY_PREFIX}...) nor a key file or a pack folder`);
}

function signatureLine(s: PackSignatureCheck): string {
  switch (s.status) {
    case 'trusted':
      return `signed by ${s.signer_label === 'you' ? 'you' : s.signer_label} (${s.signer}), trusted`;
    case 'untrusted':
      return `signed by ${s.signer}, NOT trusted (svc packs trust ${s.signer} after checking it with its creator; or --allow-untrusted)`;
    case 'unsigned':
      return 'none: the pack is not signed (install needs --allow-untrusted)';
    case 'invalid':
      return `FAILED: ${s.problems.join('; ')}`;
  }
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
    case 'original_here':
      return `  ${c.id} is a copy of ${c.existing}, which this store holds (${c.existing_scope}): not installed`;
    default:
      return `  ${c.id} repeats ${c.existing} within the pack`;
  }
}
