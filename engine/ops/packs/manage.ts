import type { EngramStore, EngramWriter, SearchIndex } from '../../backend.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { polarityOf } from '../../model/polarity.js';
import { notFound } from '../../errors.js';
import type { OpContext } from '../context.js';
import { assertPackName, readPackFolder, type IntegrityCheck, type PackManifest } from './format.js';
import { scanEngram, type ScanFinding } from './scan.js';
import { packConflicts, type PackConflict } from './duplicates.js';
import { installedVersion, type PackRegistry } from './registry.js';
import { checkSignature, type PackSignatureCheck, type PackTrust } from './signing.js';
import { conflictWarnings, scanWarnings, signatureWarning } from './warnings.js';

// The installed packs (list, uninstall) and a look at a pack folder before installing it
// (preview: manifest, engrams, integrity, signature, scan findings, conflicts with this store;
// writes nothing).

export interface PackEngramSummary {
  id: string;
  statement: string;
  type: string;
  domain?: string;
  tags: string[];
  polarity: string | null;
}

const summarize = (e: EngramDoc): PackEngramSummary => ({
  id: e.id,
  statement: e.statement,
  type: e.type,
  ...(e.domain ? { domain: e.domain } : {}),
  tags: e.tags ?? [],
  polarity: polarityOf(e),
});

// ------------------------------------------------------------------------------------ list

export interface PackListEntry {
  name: string;
  version: number;
  description: string;
  creator: string;
  created_at: string;
  installed_at: string;
  engram_count: number;
  integrity: string;
  source: string;
  /** installing: an install is under way or was interrupted (install again, or uninstall). */
  state: 'installed' | 'installing';
}

export async function listPacks(registry: PackRegistry): Promise<{ count: number; packs: PackListEntry[]; warnings: string[] }> {
  const { packs, problems } = await registry.list();
  const warnings = [...problems];
  const entries = packs.map((p): PackListEntry => {
    if (p.state === 'installing') {
      warnings.push(
        `the install of pack ${p.name} v${p.version} did not finish (interrupted?): run svc packs install ${p.source} again, or svc packs uninstall ${p.name}`,
      );
    }
    return {
      name: p.name,
      version: p.version,
      description: p.description,
      creator: p.creator,
      created_at: p.created_at,
      installed_at: p.installed_at,
      engram_count: p.ids.length,
      integrity: p.integrity,
      source: p.source,
      state: p.state === 'installing' ? 'installing' : 'installed',
    };
  });
  return { count: entries.length, packs: entries, warnings };
}

// --------------------------------------------------------------------------------- preview

export interface PackPreview {
  path: string;
  manifest: PackManifest;
  integrity: IntegrityCheck;
  /** Who signed the pack and whether you trust them. */
  signature: PackSignatureCheck;
  engrams: PackEngramSummary[];
  findings: ScanFinding[];
  conflicts: PackConflict[];
  /** The installed version of this pack in the store, if any. */
  installed: { version: number; installed_at: string; engram_count: number; state: 'installed' | 'installing' } | null;
  warnings: string[];
}

/** Everything about a pack folder, checked against this store and the keys the user trusts; writes nothing. */
export async function previewPack(
  backend: EngramStore & SearchIndex,
  registry: PackRegistry,
  dir: string,
  trust: PackTrust,
): Promise<PackPreview> {
  const folder = await readPackFolder(dir);
  const name = folder.manifest.name;
  const engrams = folder.engrams.map((p) => p.engram);
  const findings = engrams.flatMap(scanEngram);
  const { conflicts } = await packConflicts(backend, name, engrams);
  const signature = await checkSignature(folder, trust);
  const record = await registry.get(name);
  const warnings = folder.integrity.ok
    ? []
    : [`integrity check failed, install will refuse this pack: ${folder.integrity.problems.join('; ')}`];
  const signed = signatureWarning(signature);
  if (signed) warnings.push(signed);
  warnings.push(...scanWarnings(engrams, findings, name, backend.secretPolicy), ...conflictWarnings(conflicts));
  const version = installedVersion(record);
  return {
    path: folder.dir,
    manifest: folder.manifest,
    integrity: folder.integrity,
    signature,
    engrams: engrams.map(summarize),
    findings,
    conflicts,
    installed: record
      ? {
          version: version ?? record.version,
          installed_at: record.installed_at,
          engram_count: record.ids.length,
          state: record.state === 'installing' ? 'installing' : 'installed',
        }
      : null,
    warnings,
  };
}

// ------------------------------------------------------------------------------- uninstall

export interface PackUninstallResult {
  name: string;
  version: number | null;
  retired: string[];
  /** Engrams of the pack that were already retired. */
  already_retired: number;
}

/** Retires the pack's engrams (history kept) and removes the record; finishes an interrupted install's undoing too. */
export async function uninstallPack(
  backend: EngramStore & SearchIndex,
  registry: PackRegistry,
  name: string,
  ctx: OpContext,
): Promise<PackUninstallResult> {
  assertPackName(name);
  const record = await registry.get(name);
  const ids = new Set(record?.ids ?? []);
  // Also engrams whose record was lost (a hand-deleted folder): the pack field says whose they are.
  for (const e of await backend.list({})) if (e.pack === name) ids.add(e.id);
  if (!record && ids.size === 0) throw notFound(`no pack "${name}" is installed (svc packs list shows the installed packs)`);
  const now = ctx.now().toISOString();
  const { retired, already } = await backend.write(async (tx) => {
    const done: string[] = [];
    let before = 0;
    for (const id of [...ids].sort()) {
      if (await retirePackEngram(tx, id, name, `pack ${name} uninstalled`, now, ctx)) done.push(id);
      // Not retired now: already retired, or an id an interrupted install reserved and never wrote.
      else if ((await tx.get(id))?.pack === name) before += 1;
    }
    return { retired: done, already: before };
  });
  await registry.remove(name);
  return { name, version: installedVersion(record), retired, already_retired: already };
}

/** Retires one engram of the pack; false when it is not the pack's or already retired. */
export async function retirePackEngram(
  tx: EngramWriter,
  id: string,
  name: string,
  reason: string,
  now: string,
  ctx: OpContext,
): Promise<boolean> {
  const e = await tx.get(id);
  if (!e || e.pack !== name || e.status === 'retired') return false;
  e.status = 'retired';
  e.reference_count = 0;
  e.retirement = { at: now, reason };
  await tx.put(e, { action: 'retired', at: now, session: ctx.sessionId ?? undefined, details: { pack: name, reason } });
  return true;
}
