import type { EngramReader, EngramStore, SearchIndex } from '../../backend.js';
import type { EngramDoc, Relations } from '../../model/engram-types.js';
import { contentHash } from '../../model/content-hash.js';
import { parseId } from '../../model/ids.js';
import { statementFields } from '../edit.js';
import { PRIVATE_FALLBACK_SCOPE } from '../../model/scope.js';
import { conflict, SvcError } from '../../errors.js';
import type { OpContext } from '../context.js';
import { packScope, readPackFolder, type PackFolder, type PackManifest } from './format.js';
import { canonicalJson } from '../../canonical-json.js';
import { hasKind, holdsBack, scanEngram, type ScanFinding } from './scan.js';
import { packConflicts, type PackConflict } from './duplicates.js';
import { installedVersion, type InstalledPack, type PackRegistry } from './registry.js';
import { checkSignature, shortKey, type PackSignatureCheck, type PackTrust } from './signing.js';
import { STORE_LOCAL } from './store-state.js';
import { conflictWarnings, findingsById, scanWarnings } from './warnings.js';
import { retirePackEngram } from './manage.js';

// Install refuses a pack whose integrity check fails or whose signature does not verify (a
// tampered pack; nothing is written), and an unsigned pack or one signed by a key the user
// does not trust unless allowed. Otherwise it installs, reporting scan findings and conflicts
// (spec: "the pack still installs"), with the learn write path's guards:
//   - each pack engram gets an id of this store, allocated as learn allocates them, and
//     `provenance` naming where it came from (origin: the pack and its creator; chain: the ids
//     it had in the stores it came through, the pack's last). The pack's ids are never written
//     here, so a copy can never take the place of its original in a shared history (sync);
//   - a reinstall or a new version maps each pack engram to the copy it installed before (by
//     the last id of the chain) and updates it in place: per-store state such as feedback and
//     activation is kept; nothing changes when the pack did not; dropped engrams retire;
//     retired ones revive;
//   - an engram whose original (or any engram of its chain) is in this store is not installed
//     (a pack installed into the store that exported it, or a clone of it): `original_here`;
//   - scope `pack:<name>` and `pack: <name>`; a secret: scope `local`, visibility private
//     (learn's secret guard); prompt-injection text or terminal control characters: status
//     `candidate`, so inject never shows it to an agent until a person promotes it;
//   - content-hash dedup: the same statement twice in a pack installs once; the same statement
//     elsewhere in the store is reported as a duplicate and bumps recurrence_count on both
//     sides, as learn does across scopes.
// Crash safety: the ids are allocated first (one write unit), the record is written marked
// `installing` with every id the install may write, then the engrams (one write unit), then the
// record is marked complete (see engine/ops/packs/registry.ts).
//
// In the result, `created`, `updated`, `unchanged`, `retired`, `demoted` and `candidates` are
// ids of this store; `skipped`, `findings` and `conflicts` name the pack's own ids; `id_map`
// maps the second to the first.

export interface PackInstallOptions {
  /** The keys the user trusts. */
  trust: PackTrust;
  /** Install a pack that is unsigned or signed by a key not trusted (never one whose signature fails). */
  allowUntrusted?: boolean;
}

export interface PackInstallResult {
  name: string;
  version: number;
  path: string;
  /** installed: first time; updated: it was installed before (any version). */
  action: 'installed' | 'updated';
  previous_version: number | null;
  signature: PackSignatureCheck;
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
  /** Holding prompt-injection text or control characters: installed as candidates (svc promote <id> after reading them). */
  candidates: string[];
  /** Pack engram id -> the id it has in this store. */
  id_map: Record<string, string>;
  findings: ScanFinding[];
  conflicts: PackConflict[];
  warnings: string[];
}

/** A pack engram and the id it gets in this store. */
interface Placement {
  p: EngramDoc;
  id: string;
}

export async function installPack(
  backend: EngramStore & SearchIndex,
  registry: PackRegistry,
  dir: string,
  ctx: OpContext,
  opts: PackInstallOptions,
): Promise<PackInstallResult> {
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
  const signature = await checkSignature(folder, opts.trust);
  acceptSignature(folder, signature, opts.allowUntrusted === true);
  const now = ctx.now();
  const at = now.toISOString();
  const previous = await registry.get(name);
  const all = folder.engrams.map((p) => p.engram);
  const { unique: incoming, inPack, conflicts } = await packConflicts(backend, name, all);
  const findings = all.flatMap(scanEngram);
  const flagged = findingsById(findings);
  const skipped: PackInstallResult['skipped'] = inPack.map((c) => ({ id: c.id, reason: `same statement as ${c.existing} in this pack` }));

  // 1. Where each pack engram goes: the copy installed before, or a new id of this store.
  const copies = await installedCopies(backend, name, previous?.ids ?? []);
  const placements = await backend.write(async (tx) => {
    const out: Placement[] = [];
    for (const p of incoming) {
      if (p.status === 'retired') {
        skipped.push({ id: p.id, reason: 'retired in the pack' });
        continue;
      }
      if (backend.secretPolicy === 'refuse' && hasKind(flagged.get(p.id) ?? [], 'secret')) {
        skipped.push({ id: p.id, reason: 'holds a secret, and this store does not keep secrets' });
        continue;
      }
      const copy = copies.get(p.id);
      if (copy) {
        out.push({ p, id: copy.id });
        continue;
      }
      const original = await originalHere(tx, p, name);
      if (original) {
        const where = original.pack ? `installed by pack "${original.pack}"` : `scope ${original.scope}`;
        skipped.push({ id: p.id, reason: `this store holds its original, ${original.id} (${where}); the pack's copy is not installed` });
        conflicts.push({
          kind: 'original_here',
          id: p.id,
          statement: p.statement,
          existing: original.id,
          existing_statement: original.statement,
          existing_scope: original.scope,
        });
        continue;
      }
      const scope = hasKind(flagged.get(p.id) ?? [], 'secret') ? PRIVATE_FALLBACK_SCOPE : packScope(name);
      out.push({ p, id: await tx.allocateId(parseId(p.id)?.kind ?? 'ENG', now, scope) });
    }
    return out;
  });
  const idMap = Object.fromEntries(placements.map(({ p, id }) => [p.id, id]));

  // 2. The record, before any engram is written: every id this install may write.
  const base = { ...manifest, installed_at: at, source: folder.dir };
  await registry.put({
    ...base,
    ids: [...new Set([...(previous?.ids ?? []), ...placements.map((x) => x.id)])],
    state: 'installing',
    replaces: installedVersion(previous),
  });

  // 3. The engrams.
  const result = await backend.write(async (tx) => {
    const created: string[] = [];
    const updated: string[] = [];
    const unchanged: string[] = [];
    const retired: string[] = [];
    const demoted: string[] = [];
    const candidates: string[] = [];
    const keep: string[] = [];
    // Read everything first, then write: lookups then see the store, not our own pending writes.
    const plans: Array<{ p: EngramDoc; id: string; existing: EngramDoc | null; twins: EngramDoc[] }> = [];
    for (const { p, id } of placements) {
      const existing = await tx.get(id);
      if (existing && existing.pack !== name) {
        throw conflict(`engram id ${id} was taken while pack "${name}" was installing; nothing was installed: run the install again`);
      }
      const hash = contentHash(p.statement);
      const twins = (await tx.findByHash(hash)).filter((t) => t.id !== id && t.pack !== name && t.status !== 'retired');
      plans.push({ p, id, existing, twins });
    }
    const bumped = new Map<string, EngramDoc>();
    // An engram keeps its signature only when the pack's verified: an unsigned pack's are just text.
    const signed = signature.status === 'trusted' || signature.status === 'untrusted';
    const { validateEngram } = await import('../../model/validate-engram.js');
    for (const { p, id, existing, twins } of plans) {
      const found = flagged.get(p.id) ?? [];
      const secret = hasKind(found, 'secret');
      const held = holdsBack(found);
      const fresh = !existing || existing.status === 'retired';
      const doc = installedDoc(
        p,
        id,
        manifest,
        at,
        { secret, held, signed, sessionId: ctx.sessionId ?? null },
        existing,
        twins.length,
        idMap,
      );
      const check = validateEngram(doc);
      if (!check.ok) {
        skipped.push({ id: p.id, reason: `not a valid engram once installed: ${check.errors.join('; ')}` });
        continue;
      }
      keep.push(doc.id);
      if (secret) demoted.push(doc.id);
      if (doc.status === 'candidate' && held) candidates.push(doc.id);
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
        await tx.put(doc, { action: 'created', at, session: ctx.sessionId ?? undefined, details });
      } else {
        updated.push(doc.id);
        await tx.put(doc, { action: fresh ? 'reactivated' : 'updated', at, session: ctx.sessionId ?? undefined, details });
      }
    }
    for (const t of bumped.values()) await tx.put(t);
    // Engrams the previous version (or an interrupted install) had and this one dropped.
    const kept = new Set(keep);
    for (const id of previous?.ids ?? []) {
      if (kept.has(id)) continue;
      if (await retirePackEngram(tx, id, name, `no longer in pack ${name} version ${manifest.version}`, at, ctx)) retired.push(id);
    }
    return { created, updated, unchanged, retired, demoted, candidates, keep };
  });

  // 4. The record, complete.
  const { keep, ...lists } = result;
  const record: InstalledPack = { ...base, ids: keep };
  await registry.put(record);
  const warnings = [...scanWarnings(all, findings, name, backend.secretPolicy), ...conflictWarnings(conflicts)];
  if (signature.status === 'unsigned') warnings.unshift('installed an unsigned pack (allowed for this install): nothing says who made it');
  if (signature.status === 'untrusted')
    warnings.unshift(`installed a pack signed by ${signature.signer}, a key you do not trust (allowed for this install)`);
  for (const s of skipped) warnings.push(`skipped ${s.id}: ${s.reason}`);
  const before = installedVersion(previous);
  const installed = new Set(keep);
  return {
    name,
    version: manifest.version,
    path: folder.dir,
    action: before !== null ? 'updated' : 'installed',
    previous_version: before,
    signature,
    ...lists,
    skipped,
    id_map: Object.fromEntries(Object.entries(idMap).filter(([, id]) => installed.has(id))),
    findings,
    conflicts,
    warnings,
  };
}

/** Refuses a signature that does not verify, always; an unsigned or untrusted pack unless allowed. */
function acceptSignature(folder: PackFolder, check: PackSignatureCheck, allowUntrusted: boolean): void {
  const name = folder.manifest.name;
  if (check.status === 'invalid') {
    throw new SvcError(
      'conflict',
      `pack "${name}" at ${folder.dir} failed its signature check and was not installed (it changed after it was signed; get a fresh copy from its creator)`,
      check.problems,
    );
  }
  if (allowUntrusted || check.status === 'trusted') return;
  const allow = 'or allow it for this install (--allow-untrusted; allow_untrusted on the MCP tool and the hub)';
  if (check.status === 'unsigned')
    throw conflict(
      `pack "${name}" at ${folder.dir} is not signed, so nothing says who made it; it was not installed: ask its creator for a signed copy, ${allow}`,
    );
  throw conflict(
    `pack "${name}" at ${folder.dir} is signed by ${shortKey(check.signer!)}, a key you do not trust; it was not installed: check the key with its creator and run svc packs trust ${check.signer}, ${allow}`,
  );
}

/** The key that ties a copy to the pack engram it came from: the last id of its chain (its own id for copies installed before provenance). */
const originKey = (e: EngramDoc): string => e.provenance?.chain?.at(-1) ?? e.id;

/** This pack's copies in the store (retired ones too, so a reinstall revives them), by origin key. */
async function installedCopies(backend: EngramStore & SearchIndex, name: string, recorded: string[]): Promise<Map<string, EngramDoc>> {
  const found = new Map<string, EngramDoc>();
  const mine = (e: EngramDoc | null): void => {
    if (e?.pack === name) found.set(e.id, e);
  };
  for (const scope of [packScope(name), PRIVATE_FALLBACK_SCOPE])
    for (const e of await backend.list({ scope, includeRetired: true })) mine(e);
  for (const id of recorded) if (!found.has(id)) mine(await backend.get(id));
  const copies = new Map<string, EngramDoc>();
  for (const e of [...found.values()].sort((a, b) => (a.id < b.id ? -1 : 1))) if (!copies.has(originKey(e))) copies.set(originKey(e), e);
  return copies;
}

/** An engram of this store that the pack engram is a copy of (its id or any id of its chain), not a copy of this pack. */
async function originalHere(tx: EngramReader, p: EngramDoc, name: string): Promise<EngramDoc | null> {
  for (const id of [...(p.provenance?.chain ?? []), p.id]) {
    const e = await tx.get(id);
    if (e && e.pack !== name) return e;
  }
  return null;
}

/** Ids of the pack's own engrams in the relations, as this store knows them. */
function mapRelations(relations: Relations | undefined, idMap: Record<string, string>): Relations | undefined {
  if (!relations) return relations;
  const out: Record<string, string[]> = {};
  for (const [k, ids] of Object.entries(relations)) out[k] = (ids as string[]).map((id) => idMap[id] ?? id);
  return out as Relations;
}

/** The engram as this store holds it: the pack's content, this store's id and state, and where it came from. */
function installedDoc(
  p: EngramDoc,
  id: string,
  manifest: PackManifest,
  now: string,
  flags: { secret: boolean; held: boolean; signed: boolean; sessionId: string | null },
  existing: EngramDoc | null,
  recurrences: number,
  idMap: Record<string, string>,
): EngramDoc {
  const name = manifest.name;
  const doc = structuredClone(p) as EngramDoc;
  for (const k of STORE_LOCAL) delete doc[k];
  doc.id = id;
  doc.pack = name;
  doc.scope = flags.secret ? PRIVATE_FALLBACK_SCOPE : packScope(name);
  if (flags.secret) doc.visibility = 'private';
  if (doc.relations) doc.relations = mapRelations(doc.relations, idMap);
  doc.provenance = {
    ...p.provenance,
    origin: `pack ${name} by ${manifest.creator || 'an unnamed creator'}`,
    chain: [...(p.provenance?.chain ?? []), p.id],
    signature: flags.signed ? (p.provenance?.signature ?? null) : null,
  };
  // The pack's own polarity stands when its author set one; the hash is always this store's.
  const derived = statementFields(doc.statement);
  doc.content_hash = derived.content_hash;
  doc.polarity = p.polarity ?? derived.polarity;
  const status = flags.held || p.status === 'candidate' ? 'candidate' : 'active';
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
