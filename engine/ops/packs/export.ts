import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { EngramStore } from '../../backend.js';
import type { EngramDoc, EngramType } from '../../model/engram-types.js';
import { conflict, invalid, notFound, SvcError } from '../../errors.js';
import type { OpContext } from '../context.js';
import {
  assertPackName,
  defaultPackDir,
  ENGRAMS_DIR,
  engramFileName,
  IntegrityHash,
  MANIFEST_FILE,
  PACK_FORMAT,
  pathKind,
  peekManifest,
  type PackManifest,
} from './format.js';
import { describeFindings, scanEngram, type ScanFinding } from './scan.js';
import { engramSignature, manifestPayload, type PackSigner } from './signing.js';
import { STORE_LOCAL } from './store-state.js';
import { scanWarnings } from './warnings.js';

// Export: engrams matching --domain/--scope/--tags/--type, not retired, visibility public or
// template only (private is never exported) and holding no secret; what is left out is
// reported with the reason. Per-store state is not exported. Each engram carries provenance
// (origin: who made it; chain: the stores it came through) and, with a signer, its signature;
// the manifest carries the signer's public key and a signature over itself, integrity hash
// included. The folder is written aside and swapped in, so a failed export leaves the old one
// intact; a folder holding another pack (or anything that is not a pack) is never overwritten.

const SHAREABLE = new Set(['public', 'template']);

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
  /** The public key the pack is signed with (null: unsigned). */
  signer: string | null;
  engrams: Array<{ id: string; statement: string }>;
  /** Matching engrams that were not exported, and why. */
  left_out: Array<{ id: string; reason: 'private' | 'secret'; detail: string }>;
  left_out_counts: { private: number; secret: number };
  /** Prompt-injection and control-character findings among the exported engrams (exported anyway; installers see them too). */
  findings: ScanFinding[];
  warnings: string[];
}

/** Exports a pack, signed when `signer` is given (the hub, which keeps no key, exports unsigned packs). */
export async function exportPack(
  backend: EngramStore,
  input: PackExportInput,
  ctx: OpContext,
  signer: PackSigner | null,
): Promise<PackExportResult> {
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
  const counts = {
    private: leftOut.filter((l) => l.reason === 'private').length,
    secret: leftOut.filter((l) => l.reason === 'secret').length,
  };
  if (chosen.length === 0) {
    throw invalid(
      `nothing to export: all ${matched.length} matching engram(s) were left out (${counts.private} private, ${counts.secret} holding secrets); ` +
        'only engrams with visibility public or template are exported (svc learn --visibility public)',
    );
  }

  const creator = input.creator ?? defaultCreator();
  const { stringifyEngram } = await import('../../store/engram-yaml.js');
  const { parse, stringify } = await import('yaml');
  const hash = new IntegrityHash();
  const files: Array<[string, string]> = [];
  for (const e of chosen) {
    const doc = exportedDoc(e, input.name, creator);
    // Signed as an installer reads the file back, then the signature joins the file.
    if (signer) doc.provenance!.signature = engramSignature(signer, parse(stringifyEngram(doc)));
    const text = stringifyEngram(doc);
    const file = engramFileName(e.id);
    hash.add(file, parse(text));
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
    creator,
    created_at: ctx.now().toISOString(),
    engram_count: files.length,
    integrity,
    ...(signer ? { signer: signer.publicKey } : {}),
  };
  if (signer) manifest.signature = signer.sign(manifestPayload(manifest));
  writeFolder(target, files, stringify(manifest, { lineWidth: 0 }));

  const warnings: string[] = [];
  if (counts.private)
    warnings.push(
      `left out ${counts.private} private engram(s): visibility private is never exported (learn with --visibility public to share)`,
    );
  for (const l of leftOut.filter((x) => x.reason === 'secret')) warnings.push(`left out ${l.id}: ${l.detail}`);
  warnings.push(...scanWarnings(chosen, findings, input.name, 'keep-local', 'installers will get it as a candidate'));
  return {
    name: input.name,
    version,
    path: target,
    engram_count: files.length,
    integrity,
    signer: signer?.publicKey ?? null,
    engrams: chosen.map((e) => ({ id: e.id, statement: e.statement })),
    left_out: leftOut,
    left_out_counts: counts,
    findings,
    warnings,
  };
}

/** The engram as a pack carries it: content and provenance, no per-store state, no signature yet. */
function exportedDoc(e: EngramDoc, name: string, creator: string): EngramDoc {
  const doc = structuredClone(e) as EngramDoc;
  for (const k of STORE_LOCAL) delete doc[k];
  if (doc.status === 'dormant') doc.status = 'active';
  if (doc.temporal) {
    const { ingested_at: _drop, ...temporal } = doc.temporal;
    doc.temporal = temporal;
  }
  doc.pack = name;
  // An engram that came in a pack keeps its origin and chain; one made here originates with the creator.
  const { signature: _old, ...kept } = e.provenance ?? { origin: creator };
  doc.provenance = { ...kept, origin: kept.origin || creator, chain: kept.chain ?? [] };
  return doc;
}

/** Refuses a target that is a link, holds another pack or anything else; returns the manifest of the same pack being re-exported. */
async function checkExportTarget(target: string, name: string): Promise<Record<string, unknown> | null> {
  const kind = pathKind(target);
  if (kind === null) return null;
  if (kind === 'link')
    throw conflict(`cannot export to ${target}: it is a symbolic link, and packs never follow links; choose a real folder with --output`);
  if (kind !== 'folder') throw conflict(`cannot export to ${target}: it is a file, not a folder`);
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
    if (pathKind(target) !== null) {
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
