import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { EngramBackend, SecretPolicy, EngramWriter } from '../backend.js';
import type { EngramDoc, EngramType } from '../model/engram-schema.js';
import { contentHash } from '../model/content-hash.js';
import { detectPolarity } from '../model/polarity.js';
import { PRIVATE_FALLBACK_SCOPE } from '../model/scope.js';
import { conflict, invalid, notFound, SvcError } from '../errors.js';
import type { OpContext } from './context.js';
import {
  assertPackName,
  canonicalJson,
  defaultPackDir,
  ENGRAMS_DIR,
  engramFileName,
  IntegrityHash,
  MANIFEST_FILE,
  PACK_FORMAT,
  packScope,
  peekManifest,
  readPackFolder,
  type IntegrityCheck,
  type PackManifest,
} from '../packs/format.js';
import { describeFindings, hasKind, scanEngram, type ScanFinding } from '../packs/scan.js';
import { findConflicts, type PackConflict } from '../packs/conflicts.js';
import type { InstalledPack, PackRegistry } from '../packs/registry.js';

// Packs: named bundles of engrams with a manifest and an integrity hash (format and hash in
// engine/packs/format.ts, security scan in engine/packs/scan.ts, the installed-pack record in
// engine/packs/registry.ts, conflict detection in engine/packs/conflicts.ts).
//
// export    engrams matching --domain/--scope/--tags/--type, not retired, visibility public or
//           template only (private is never exported) and holding no secret; what is left out
//           is reported with the reason. Per-store state (activation, feedback, usage, pinning,
//           sources, counts, episodes, associations) is not exported. The folder is written
//           aside and swapped in, so a failed export leaves the old one intact; a folder holding
//           another pack (or anything that is not a pack) is never overwritten.
// preview   reads and checks a pack folder and writes nothing: manifest, engrams, integrity,
//           scan findings, conflicts with this store, whether it is installed.
// install   refuses a pack whose integrity check fails (a tampered pack; nothing is written).
//           Otherwise it installs, reporting scan findings and conflicts (spec: "the pack still
//           installs"), with the learn write path's guards:
//             - the engram keeps its id, gets `pack: <name>` and scope `pack:<name>`;
//             - a secret: scope `local`, visibility private (learn's secret guard);
//             - prompt-injection text: status `candidate`, so inject never shows it to an agent
//               until a person promotes it;
//             - content-hash dedup: the same statement twice in a pack installs once; the same
//               statement elsewhere in the store is reported as a duplicate and bumps
//               recurrence_count on both sides, as learn does across scopes;
//             - an id already used by an engram that is not this pack's is skipped (installing
//               a pack into the store it came from: the originals stay as they are).
//           All engrams are written in one write transaction. Reinstalling updates in place
//           (per-store state such as feedback and activation is kept; nothing changes when the
//           pack did not), retires the engrams a new version dropped, and revives retired ones.
// uninstall retires the pack's engrams (history kept) and removes the record.

export { defaultPackDir } from '../packs/format.js';
export { FilePackRegistry, type InstalledPack, type PackRegistry } from '../packs/registry.js';
export type { PackManifest, IntegrityCheck } from '../packs/format.js';
export type { ScanFinding } from '../packs/scan.js';
export type { PackConflict } from '../packs/conflicts.js';

/** Fields that describe this store's use of an engram, not its content: never exported, kept on reinstall. */
const STORE_LOCAL = [
  'activation',
  'feedback_signals',
  'usage',
  'pinned',
  'sources',
  'reference_count',
  'recurrence_count',
  'episode_ids',
  'associations',
  'previous_version_ref',
  'retirement',
] as const;

const SHAREABLE = new Set(['public', 'template']);

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
  polarity: e.polarity ?? detectPolarity(e.statement),
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
}

export async function listPacks(registry: PackRegistry): Promise<{ count: number; packs: PackListEntry[]; warnings: string[] }> {
  const { packs, problems } = await registry.list();
  const entries = packs.map((p) => ({
    name: p.name,
    version: p.version,
    description: p.description,
    creator: p.creator,
    created_at: p.created_at,
    installed_at: p.installed_at,
    engram_count: p.ids.length,
    integrity: p.integrity,
    source: p.source,
  }));
  return { count: entries.length, packs: entries, warnings: problems };
}

// --------------------------------------------------------------------------------- preview

export interface PackPreview {
  path: string;
  manifest: PackManifest;
  integrity: IntegrityCheck;
  engrams: PackEngramSummary[];
  findings: ScanFinding[];
  conflicts: PackConflict[];
  /** The installed version of this pack in the store, if any. */
  installed: { version: number; installed_at: string; engram_count: number } | null;
  warnings: string[];
}

/** Everything about a pack folder, checked against this store; writes nothing. */
export async function previewPack(backend: EngramBackend, registry: PackRegistry, dir: string): Promise<PackPreview> {
  const folder = await readPackFolder(dir);
  const name = folder.manifest.name;
  const engrams = folder.engrams.map((p) => p.engram);
  const findings = engrams.flatMap(scanEngram);
  const conflicts = [...inPackDuplicates(engrams).conflicts, ...findConflicts(engrams, await liveOutside(backend, name))];
  const record = await registry.get(name);
  const warnings = folder.integrity.ok
    ? []
    : [`integrity check failed, install will refuse this pack: ${folder.integrity.problems.join('; ')}`];
  warnings.push(...scanWarnings(engrams, findings, name, backend.secretPolicy), ...conflictWarnings(conflicts));
  return {
    path: folder.dir,
    manifest: folder.manifest,
    integrity: folder.integrity,
    engrams: engrams.map(summarize),
    findings,
    conflicts,
    installed: record ? { version: record.version, installed_at: record.installed_at, engram_count: record.ids.length } : null,
    warnings,
  };
}

// --------------------------------------------------------------------------------- install

export interface PackInstallResult {
  name: string;
  version: number;
  path: string;
  /** installed: first time; updated: it was installed before (any version). */
  action: 'installed' | 'updated';
  previous_version: number | null;
  /** Engrams new to the store. */
  created: string[];
  /** Engrams that existed and changed (a new pack version), or had been retired and came back. */
  updated: string[];
  unchanged: string[];
  /** Engrams of the previous version that this version dropped. */
  retired: string[];
  skipped: Array<{ id: string; reason: string }>;
  /** Holding a secret: installed in scope local, private. */
  demoted: string[];
  /** Holding prompt-injection text: installed as candidates (svc promote <id> after reading them). */
  candidates: string[];
  findings: ScanFinding[];
  conflicts: PackConflict[];
  warnings: string[];
}

export async function installPack(backend: EngramBackend, registry: PackRegistry, dir: string, ctx: OpContext): Promise<PackInstallResult> {
  const folder = await readPackFolder(dir);
  const { manifest } = folder;
  const name = manifest.name;
  if (!folder.integrity.ok) {
    throw new SvcError(
      'conflict',
      `pack "${name}" at ${folder.dir} failed its integrity check and was not installed (it changed after export; get a fresh copy)`,
      folder.integrity.problems,
    );
  }
  const now = ctx.now().toISOString();
  const previous = await registry.get(name);
  const all = folder.engrams.map((p) => p.engram);
  const { unique: incoming, conflicts: inPack } = inPackDuplicates(all);
  const findings = all.flatMap(scanEngram);
  const flagged = new Map<string, ScanFinding[]>();
  for (const f of findings) flagged.set(f.id, [...(flagged.get(f.id) ?? []), f]);
  const conflicts = [...inPack, ...findConflicts(incoming, await liveOutside(backend, name))];
  const skipped: PackInstallResult['skipped'] = inPack.map((c) => ({ id: c.id, reason: `same statement as ${c.existing} in this pack` }));

  const result = await backend.write(async (tx) => {
    const created: string[] = [];
    const updated: string[] = [];
    const unchanged: string[] = [];
    const retired: string[] = [];
    const demoted: string[] = [];
    const candidates: string[] = [];
    const keep: string[] = [];
    // Read everything first, then write: lookups then see the store, not our own pending writes.
    const plans: Array<{ doc: EngramDoc; existing: EngramDoc | null; twins: EngramDoc[] }> = [];
    for (const p of incoming) {
      const existing = await tx.get(p.id);
      if (existing && existing.pack !== name) {
        const owner = existing.pack ? `pack "${existing.pack}"` : `scope ${existing.scope}`;
        skipped.push({ id: p.id, reason: `id already used in this store (${owner})` });
        conflicts.push({ kind: 'id_taken', id: p.id, statement: p.statement, existing: existing.id, existing_statement: existing.statement, existing_scope: existing.scope });
        continue;
      }
      if (p.status === 'retired') {
        skipped.push({ id: p.id, reason: 'retired in the pack' });
        continue;
      }
      const hash = contentHash(p.statement);
      const twins = (await tx.findByHash(hash)).filter((t) => t.id !== p.id && t.pack !== name && t.status !== 'retired');
      plans.push({ doc: p, existing, twins });
    }
    const bumped = new Map<string, EngramDoc>();
    const { validateEngram } = await import('../model/validate-engram.js');
    for (const { doc: p, existing, twins } of plans) {
      const found = flagged.get(p.id) ?? [];
      const secret = hasKind(found, 'secret');
      const injection = hasKind(found, 'injection');
      if (secret && backend.secretPolicy === 'refuse') {
        skipped.push({ id: p.id, reason: 'holds a secret, and this store does not keep secrets' });
        continue;
      }
      const fresh = !existing || existing.status === 'retired';
      const doc = installedDoc(p, name, now, { secret, injection, sessionId: ctx.sessionId ?? null }, existing, twins.length);
      const check = validateEngram(doc);
      if (!check.ok) {
        skipped.push({ id: p.id, reason: `not a valid engram once installed: ${check.errors.join('; ')}` });
        continue;
      }
      keep.push(doc.id);
      if (secret) demoted.push(doc.id);
      if (doc.status === 'candidate' && injection) candidates.push(doc.id);
      if (existing && canonicalJson(existing) === canonicalJson(doc)) {
        unchanged.push(doc.id);
        continue;
      }
      const details = { pack: name, version: manifest.version };
      if (!existing) {
        created.push(doc.id);
        for (const t of twins) {
          const target = bumped.get(t.id) ?? t;
          target.recurrence_count = (target.recurrence_count ?? 0) + 1;
          bumped.set(t.id, target);
        }
        await tx.put(doc, { action: 'created', at: now, session: ctx.sessionId ?? undefined, details });
      } else {
        updated.push(doc.id);
        await tx.put(doc, { action: fresh ? 'reactivated' : 'updated', at: now, session: ctx.sessionId ?? undefined, details });
      }
    }
    for (const t of bumped.values()) await tx.put(t);
    // Engrams the previous version had and this one dropped.
    const kept = new Set(keep);
    for (const id of previous?.ids ?? []) {
      if (kept.has(id)) continue;
      if (await retire(tx, id, name, `no longer in pack ${name} version ${manifest.version}`, now, ctx)) retired.push(id);
    }
    return { created, updated, unchanged, retired, demoted, candidates, keep };
  });

  const record: InstalledPack = { ...manifest, installed_at: now, source: folder.dir, ids: result.keep };
  await registry.put(record);
  const warnings = [...scanWarnings(all, findings, name, backend.secretPolicy), ...conflictWarnings(conflicts)];
  for (const s of skipped) warnings.push(`skipped ${s.id}: ${s.reason}`);
  const { keep: _keep, ...lists } = result;
  return {
    name,
    version: manifest.version,
    path: folder.dir,
    action: previous ? 'updated' : 'installed',
    previous_version: previous?.version ?? null,
    ...lists,
    skipped,
    findings,
    conflicts,
    warnings,
  };
}

/** The engram as this store holds it: the pack's content with this store's state. */
function installedDoc(
  p: EngramDoc,
  name: string,
  now: string,
  flags: { secret: boolean; injection: boolean; sessionId: string | null },
  existing: EngramDoc | null,
  recurrences: number,
): EngramDoc {
  const doc = structuredClone(p) as EngramDoc;
  for (const k of STORE_LOCAL) delete doc[k];
  doc.pack = name;
  doc.scope = flags.secret ? PRIVATE_FALLBACK_SCOPE : packScope(name);
  if (flags.secret) doc.visibility = 'private';
  doc.content_hash = contentHash(doc.statement);
  doc.polarity = p.polarity ?? detectPolarity(p.statement);
  const status = flags.injection || p.status === 'candidate' ? 'candidate' : 'active';
  const live = existing && existing.status !== 'retired' ? existing : null;
  doc.temporal = {
    ...p.temporal,
    learned_at: p.temporal?.learned_at ?? live?.temporal?.learned_at ?? now,
    ingested_at: live?.temporal?.ingested_at ?? now,
  };
  if (live) {
    // Reinstall: this store's use of the engram stays, and so does its status (a person may have
    // promoted a candidate, decay may have made it dormant) unless the statement changed or the
    // finding that held it back as a candidate is gone.
    for (const k of STORE_LOCAL) if (live[k] !== undefined) (doc as Record<string, unknown>)[k] = structuredClone(live[k]);
    const sameStatement = live.content_hash === doc.content_hash;
    doc.status = !sameStatement || (live.status === 'candidate' && status === 'active') ? status : live.status;
    return doc;
  }
  doc.status = status;
  doc.activation = { retrieval_strength: 0.7, storage_strength: 1, frequency: 0, last_accessed: now };
  doc.feedback_signals = { positive: 0, negative: 0, neutral: 0 };
  doc.sources = [{ scope: doc.scope, session_id: flags.sessionId, stored_at: now }];
  doc.reference_count = 1;
  doc.recurrence_count = recurrences;
  doc.pinned = false;
  return doc;
}

/** Keeps the first engram of each statement; the others are reported. */
function inPackDuplicates(engrams: EngramDoc[]): { unique: EngramDoc[]; conflicts: PackConflict[] } {
  const first = new Map<string, EngramDoc>();
  const unique: EngramDoc[] = [];
  const conflicts: PackConflict[] = [];
  for (const e of engrams) {
    const hash = contentHash(e.statement);
    const seen = first.get(hash);
    if (seen) {
      conflicts.push({ kind: 'duplicate_in_pack', id: e.id, statement: e.statement, existing: seen.id, existing_statement: seen.statement });
      continue;
    }
    first.set(hash, e);
    unique.push(e);
  }
  return { unique, conflicts };
}

/** Live engrams that are not this pack's own: what a pack can conflict with. */
async function liveOutside(backend: EngramBackend, name: string): Promise<EngramDoc[]> {
  return (await backend.list({})).filter((e) => e.pack !== name);
}

function scanWarnings(engrams: EngramDoc[], findings: ScanFinding[], name: string, policy: SecretPolicy = 'keep-local'): string[] {
  const warnings: string[] = [];
  const byId = new Map<string, ScanFinding[]>();
  for (const f of findings) byId.set(f.id, [...(byId.get(f.id) ?? []), f]);
  for (const e of engrams) {
    const found = byId.get(e.id);
    if (!found) continue;
    const secrets = found.filter((f) => f.kind === 'secret');
    const injection = found.filter((f) => f.kind === 'injection');
    if (secrets.length) {
      const fate = policy === 'refuse' ? 'this store does not keep secrets: it is skipped' : `it goes to scope "${PRIVATE_FALLBACK_SCOPE}" instead of "${packScope(name)}"`;
      warnings.push(`${e.id} looks like it holds a secret: ${describeFindings(secrets)}; ${fate}`);
    }
    if (injection.length) {
      warnings.push(`${e.id} holds text aimed at the agent (prompt injection?): ${describeFindings(injection)}; it installs as a candidate, never injected until you promote it`);
    }
  }
  return warnings;
}

function conflictWarnings(conflicts: PackConflict[]): string[] {
  return conflicts
    .filter((c) => c.kind === 'duplicate' || c.kind === 'contradiction')
    .map((c) =>
      c.kind === 'duplicate'
        ? `${c.id} duplicates ${c.existing} (${c.existing_scope}): "${c.statement}"`
        : `${c.id} contradicts ${c.existing} (${c.existing_scope}): "${c.statement}" vs "${c.existing_statement}"`,
    );
}

async function retire(tx: EngramWriter, id: string, name: string, reason: string, now: string, ctx: OpContext): Promise<boolean> {
  const e = await tx.get(id);
  if (!e || e.pack !== name || e.status === 'retired') return false;
  e.status = 'retired';
  e.reference_count = 0;
  e.retirement = { at: now, reason };
  await tx.put(e, { action: 'retired', at: now, session: ctx.sessionId ?? undefined, details: { pack: name, reason } });
  return true;
}

// ------------------------------------------------------------------------------- uninstall

export interface PackUninstallResult {
  name: string;
  version: number | null;
  retired: string[];
  /** Engrams of the pack that were already retired. */
  already_retired: number;
}

export async function uninstallPack(backend: EngramBackend, registry: PackRegistry, name: string, ctx: OpContext): Promise<PackUninstallResult> {
  assertPackName(name);
  const record = await registry.get(name);
  const ids = new Set(record?.ids ?? []);
  // Also engrams whose record was lost (a hand-deleted folder): the pack field says whose they are.
  for (const e of await backend.list({})) if (e.pack === name) ids.add(e.id);
  if (!record && ids.size === 0) throw notFound(`no pack "${name}" is installed (svc packs list shows the installed packs)`);
  const now = ctx.now().toISOString();
  const retired = await backend.write(async (tx) => {
    const done: string[] = [];
    for (const id of [...ids].sort()) if (await retire(tx, id, name, `pack ${name} uninstalled`, now, ctx)) done.push(id);
    return done;
  });
  await registry.remove(name);
  return { name, version: record?.version ?? null, retired, already_retired: ids.size - retired.length };
}

// ---------------------------------------------------------------------------------- export

export interface PackExportInput {
  name: string;
  domain?: string;
  scope?: string;
  /** Engrams carrying at least one of these tags. */
  tags?: string[];
  type?: EngramType;
  description?: string;
  creator?: string;
  /** Folder to write (default ~/svc-packs/<name>). */
  output?: string;
}

export interface PackExportResult {
  name: string;
  version: number;
  path: string;
  engram_count: number;
  integrity: string;
  engrams: Array<{ id: string; statement: string }>;
  /** Matching engrams that were not exported, and why. */
  left_out: Array<{ id: string; reason: 'private' | 'secret'; detail: string }>;
  left_out_counts: { private: number; secret: number };
  /** Prompt-injection findings among the exported engrams (exported anyway; installers see them too). */
  findings: ScanFinding[];
  warnings: string[];
}

export async function exportPack(backend: EngramBackend, input: PackExportInput, ctx: OpContext): Promise<PackExportResult> {
  assertPackName(input.name);
  const target = resolve(input.output ?? defaultPackDir(input.name));
  const previous = await checkExportTarget(target, input.name);

  const tags = input.tags?.length ? new Set(input.tags) : undefined;
  const matched = (await backend.list({ scope: input.scope, domain: input.domain, type: input.type }))
    .filter((e) => !tags || (e.tags ?? []).some((t) => tags.has(t)))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (matched.length === 0) throw notFound(`no engrams match${describeFilters(input)}: nothing to export`);

  const leftOut: PackExportResult['left_out'] = [];
  const findings: ScanFinding[] = [];
  const chosen: EngramDoc[] = [];
  for (const e of matched) {
    if (!SHAREABLE.has(e.visibility ?? 'private')) {
      leftOut.push({ id: e.id, reason: 'private', detail: 'visibility private is never exported' });
      continue;
    }
    const found = scanEngram(e);
    const secrets = found.filter((f) => f.kind === 'secret');
    if (secrets.length) {
      leftOut.push({ id: e.id, reason: 'secret', detail: `looks like it holds a secret: ${describeFindings(secrets)}` });
      continue;
    }
    findings.push(...found);
    chosen.push(e);
  }
  const counts = { private: leftOut.filter((l) => l.reason === 'private').length, secret: leftOut.filter((l) => l.reason === 'secret').length };
  if (chosen.length === 0) {
    throw invalid(
      `nothing to export: all ${matched.length} matching engram(s) were left out (${counts.private} private, ${counts.secret} holding secrets); ` +
        'only engrams with visibility public or template are exported (svc learn --visibility public)',
    );
  }

  const { stringifyEngram } = await import('../store/engram-yaml.js');
  const { parse } = await import('yaml');
  const hash = new IntegrityHash();
  const files: Array<[string, string]> = [];
  for (const e of chosen) {
    const text = stringifyEngram(exportedDoc(e, input.name));
    const file = engramFileName(e.id);
    hash.add(file, parse(text)); // hashed as an installer will read it back
    files.push([file, text]);
  }
  const integrity = hash.digest();
  const prevVersion = typeof previous?.version === 'number' && Number.isInteger(previous.version) ? previous.version : 0;
  const version = previous && previous.integrity === integrity && prevVersion > 0 ? prevVersion : prevVersion + 1;
  const manifest: PackManifest = {
    format: PACK_FORMAT,
    name: input.name,
    version,
    description: input.description ?? '',
    creator: input.creator ?? defaultCreator(),
    created_at: ctx.now().toISOString(),
    engram_count: files.length,
    integrity,
  };
  const { stringify } = await import('yaml');
  writeFolder(target, files, stringify(manifest, { lineWidth: 0 }));

  const warnings: string[] = [];
  if (counts.private) warnings.push(`left out ${counts.private} private engram(s): visibility private is never exported (learn with --visibility public to share)`);
  for (const l of leftOut.filter((x) => x.reason === 'secret')) warnings.push(`left out ${l.id}: ${l.detail}`);
  const injected = new Set(findings.map((f) => f.id));
  for (const id of injected) {
    warnings.push(`${id} holds text aimed at the agent (prompt injection?): ${describeFindings(findings.filter((f) => f.id === id))}; installers will get it as a candidate`);
  }
  return {
    name: input.name,
    version,
    path: target,
    engram_count: files.length,
    integrity,
    engrams: chosen.map((e) => ({ id: e.id, statement: e.statement })),
    left_out: leftOut,
    left_out_counts: counts,
    findings,
    warnings,
  };
}

/** The engram as a pack carries it: content only, no per-store state. */
function exportedDoc(e: EngramDoc, name: string): EngramDoc {
  const doc = structuredClone(e) as EngramDoc;
  for (const k of STORE_LOCAL) delete doc[k];
  if (doc.status === 'dormant') doc.status = 'active';
  if (doc.temporal) {
    const { ingested_at: _drop, ...temporal } = doc.temporal;
    doc.temporal = temporal;
  }
  doc.pack = name;
  return doc;
}

/** Refuses a target that holds another pack or anything else; returns the manifest of the same pack being re-exported. */
async function checkExportTarget(target: string, name: string): Promise<Record<string, unknown> | null> {
  if (!existsSync(target)) return null;
  if (!statSync(target).isDirectory()) throw conflict(`cannot export to ${target}: it is a file, not a folder`);
  const manifest = await peekManifest(target);
  if (manifest) {
    if (manifest.name !== name) {
      const other = typeof manifest.name === 'string' ? `pack "${manifest.name}"` : 'an unreadable pack manifest';
      throw conflict(`cannot export pack "${name}" to ${target}: the folder already holds ${other}; choose another --output or remove it`);
    }
    return manifest;
  }
  if (readdirSync(target).length > 0) {
    throw conflict(`cannot export to ${target}: the folder is not empty and holds no pack; choose an empty or new folder with --output`);
  }
  return null;
}

/** Writes the pack beside the target, then swaps it in: readers see the old pack or the new one. */
function writeFolder(target: string, files: Array<[string, string]>, manifest: string): void {
  const parent = dirname(target);
  mkdirSync(parent, { recursive: true });
  const tag = randomBytes(4).toString('hex');
  const tmp = join(parent, `.${basename(target)}.tmp-${tag}`);
  try {
    mkdirSync(join(tmp, ENGRAMS_DIR), { recursive: true });
    for (const [file, text] of files) writeFileSync(join(tmp, ENGRAMS_DIR, file), text);
    writeFileSync(join(tmp, MANIFEST_FILE), manifest);
    if (existsSync(target)) {
      const old = join(parent, `.${basename(target)}.old-${tag}`);
      renameSync(target, old);
      renameSync(tmp, target);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, target);
    }
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw new SvcError('storage', `cannot write the pack to ${target}: ${(err as Error).message}`);
  }
}

function defaultCreator(): string {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return process.env.USER ?? 'unknown';
  }
}

function describeFilters(input: PackExportInput): string {
  const parts = [
    input.domain && `domain ${input.domain}`,
    input.scope && `scope ${input.scope}`,
    input.type && `type ${input.type}`,
    input.tags?.length && `tags ${input.tags.join(',')}`,
  ].filter(Boolean);
  return parts.length ? ` (${parts.join(', ')})` : '';
}

// -------------------------------------------------------------------------------- discover

export interface DiscoveredPack {
  name: string;
  version: number | null;
  description: string;
  creator: string;
  engram_count: number | null;
  path: string;
  /** The installed version, when an older one is installed. */
  installed_version: number | null;
}

export interface DiscoverResult {
  count: number;
  packs: DiscoveredPack[];
  /** Where it looked. */
  searched: string[];
  notes: string[];
}

/**
 * Packs available but not installed (or installed in an older version): pack folders under
 * ~/svc-packs (or `dirs`), matching any word of `query` in name or description. Remote stores
 * offer no packs in this version; a configured remote is noted.
 */
export async function discoverPacks(
  registry: PackRegistry,
  opts: { query?: string; limit?: number; dirs?: string[]; remote?: string } = {},
): Promise<DiscoverResult> {
  const dirs = (opts.dirs ?? [join(homedir(), 'svc-packs')]).map((d) => resolve(d));
  const installed = new Map((await registry.list()).packs.map((p) => [p.name, p.version]));
  const words = (opts.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  const packs: DiscoveredPack[] = [];
  for (const dir of dirs) {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) continue;
    for (const entry of readdirSync(dir).sort()) {
      if (entry.startsWith('.')) continue;
      const path = join(dir, entry);
      if (!statSync(path).isDirectory()) continue;
      const m = await peekManifest(path);
      if (!m || typeof m.name !== 'string') continue;
      const version = Number.isInteger(m.version) ? (m.version as number) : null;
      const have = installed.get(m.name);
      if (have !== undefined && (version === null || have >= version)) continue;
      const description = typeof m.description === 'string' ? m.description : '';
      const hay = `${m.name} ${description}`.toLowerCase();
      if (words.length && !words.some((w) => hay.includes(w))) continue;
      packs.push({
        name: m.name,
        version,
        description,
        creator: typeof m.creator === 'string' ? m.creator : '',
        engram_count: Number.isInteger(m.engram_count) ? (m.engram_count as number) : null,
        path,
        installed_version: have ?? null,
      });
    }
  }
  const limited = packs.slice(0, opts.limit ?? 20);
  const notes = opts.remote ? [`remote store ${opts.remote} is configured, but remote packs are not available in this version`] : [];
  return { count: limited.length, packs: limited, searched: dirs, notes };
}
