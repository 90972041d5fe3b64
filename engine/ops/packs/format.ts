import { createHash } from 'node:crypto';
import { closeSync, constants, lstatSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { invalid, type SvcError } from '../../errors.js';
import type { EngramDoc } from '../../model/engram-types.js';
import { canonicalJson } from '../../canonical-json.js';

// The pack format (version svc-pack/1). A pack is a folder:
//
//   <dir>/pack.yaml             the manifest:
//                                 format: svc-pack/1
//                                 name: ts-conventions        [A-Za-z0-9][A-Za-z0-9._-]{0,63}
//                                 version: 3                  whole number, +1 on each re-export that changes content
//                                 description: ...
//                                 creator: ...
//                                 created_at: <ISO 8601>
//                                 engram_count: 12
//                                 integrity: sha256-<hex>
//                                 signer: ed25519:<base64url public key>   (signed packs)
//                                 signature: <base64url>      Ed25519 over the manifest (see signing.ts)
//   <dir>/engrams/<id>.yaml     one engram per file, named by its id in the exporting store
//                               (an installer gives each its own id and keeps this one in
//                               provenance.chain)
//
// Nothing in a pack is ever reached through a symbolic link: the folder, pack.yaml, engrams/
// and every engram file must be what they are, or the pack is refused (a link could make an
// installer read, and report, files outside the pack).
//
// Integrity: sha256 over the canonical content of every file in engrams/, sorted by file name:
// for each file, `<file name>\n<canonical JSON of its parsed YAML>\n` (canonical JSON: object
// keys sorted, no whitespace). Hashing the parsed content rather than bytes lets a pack survive
// line-ending conversion and re-indentation, while any change to a value, and any file added,
// removed or renamed, breaks it. Nothing else in engrams/ is allowed; a file that does not parse
// is hashed by its raw bytes (so it still fails the check) and reported.

export const PACK_FORMAT = 'svc-pack/1';
export const MANIFEST_FILE = 'pack.yaml';
export const ENGRAMS_DIR = 'engrams';
const ENGRAM_EXT = '.yaml';
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ID_FILE = /^((?:ENG|ABS|META)-[A-Za-z0-9-]+)\.yaml$/;

export interface PackManifest {
  format: string;
  name: string;
  version: number;
  description: string;
  creator: string;
  created_at: string;
  engram_count: number;
  integrity: string;
  /** Public key of the creator (`ed25519:<base64url>`), on signed packs. */
  signer?: string;
  /** The creator's signature over the rest of the manifest, on signed packs. */
  signature?: string;
}

/** One engram of a pack folder, validated (schema defaults filled in). */
export interface PackEngram {
  file: string;
  engram: EngramDoc;
  /** The file's content as parsed, before validation: what its signature covers. */
  raw: unknown;
}

export interface IntegrityCheck {
  ok: boolean;
  expected: string;
  actual: string;
  /** Why it failed, in words (empty when ok). */
  problems: string[];
}

export interface PackFolder {
  dir: string;
  manifest: PackManifest;
  engrams: PackEngram[];
  integrity: IntegrityCheck;
}

/** A pack name is also a scope path (`pack:<name>`) and a folder name. */
export function checkPackName(name: string): string | null {
  if (!NAME.test(name)) {
    return `pack name "${name}" is not valid: use letters, digits, ".", "_" or "-" (at most 64 characters, starting with a letter or digit)`;
  }
  return null;
}

export function assertPackName(name: string): void {
  const bad = checkPackName(name);
  if (bad) throw invalid(bad);
}

export const packScope = (name: string): string => `pack:${name}`;

/** Where `packs export <name>` writes without --output: ~/svc-packs/<name>. */
export function defaultPackDir(name: string): string {
  return join(homedir(), 'svc-packs', name);
}

/** Incremental integrity hash: feed files in name order. */
export class IntegrityHash {
  private readonly h = createHash('sha256');
  add(file: string, content: unknown): void {
    this.h.update(`${file}\n${canonicalJson(content)}\n`);
  }
  addRaw(file: string, bytes: Buffer): void {
    this.h.update(`${file}\n`);
    this.h.update(bytes);
    this.h.update('\n');
  }
  digest(): string {
    return `sha256-${this.h.digest('hex')}`;
  }
}

export const engramFileName = (id: string): string => id + ENGRAM_EXT;

type YamlModule = typeof import('yaml');

/** What is at `path`, never following a link: null when nothing is. */
export function pathKind(path: string): 'link' | 'folder' | 'file' | 'other' | null {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return null;
  }
  return st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'folder' : st.isFile() ? 'file' : 'other';
}

/** The one line a pack with a link gets: the pack-relative path only, never where it points. */
function linkRefused(dir: string, rel: string): SvcError {
  const what = rel === '.' ? 'the pack folder itself' : rel;
  return invalid(`${dir} was refused: ${what} is a symbolic link, and packs never follow links (copy the real files into the pack)`);
}

/** Reads a file of a pack, refusing a link even if one was swapped in after the check. */
function readPackFile(dir: string, rel: string): Buffer {
  let fd: number;
  try {
    fd = openSync(join(dir, rel), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') throw linkRefused(dir, rel);
    throw invalid(
      `${dir} is not a readable pack: cannot read ${rel} (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the file and its permissions`,
    );
  }
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Reads and checks a pack folder. Throws (invalid) when it is not a pack at all; integrity problems are reported, not thrown. */
export async function readPackFolder(dirArg: string): Promise<PackFolder> {
  const dir = resolve(dirArg);
  const kind = pathKind(dir);
  if (kind === null) throw invalid(`no pack at ${dir}: the folder does not exist`);
  if (kind === 'link') throw linkRefused(dir, '.');
  if (kind !== 'folder') throw invalid(`${dir} is not a pack: it is a file, not a folder`);
  const manifestKind = pathKind(join(dir, MANIFEST_FILE));
  if (manifestKind === null) throw invalid(`${dir} is not a pack: it has no ${MANIFEST_FILE}`);
  if (manifestKind === 'link') throw linkRefused(dir, MANIFEST_FILE);
  if (manifestKind !== 'file') throw invalid(`${dir} is not a pack: its ${MANIFEST_FILE} is not a file`);
  const engramsKind = pathKind(join(dir, ENGRAMS_DIR));
  if (engramsKind === 'link') throw linkRefused(dir, `${ENGRAMS_DIR}/`);
  if (engramsKind !== null && engramsKind !== 'folder') throw invalid(`${dir} is not a pack: its ${ENGRAMS_DIR} is not a folder`);
  const files = engramsKind ? readdirSync(join(dir, ENGRAMS_DIR)).sort() : [];
  // Every link is refused before anything is read or reported.
  for (const file of files) if (pathKind(join(dir, ENGRAMS_DIR, file)) === 'link') throw linkRefused(dir, `${ENGRAMS_DIR}/${file}`);

  const yaml = await import('yaml');
  const manifest = parseManifest(yaml, readPackFile(dir, MANIFEST_FILE).toString('utf8'), join(dir, MANIFEST_FILE));
  const { validateEngram } = await import('../../model/validate-engram.js');
  const hash = new IntegrityHash();
  const engrams: PackEngram[] = [];
  const problems: string[] = [];
  for (const file of files) {
    if (pathKind(join(dir, ENGRAMS_DIR, file)) !== 'file') {
      problems.push(`${ENGRAMS_DIR}/${file} is not a file`);
      hash.addRaw(file, Buffer.from('(folder)'));
      continue;
    }
    const bytes = readPackFile(dir, `${ENGRAMS_DIR}/${file}`);
    const m = ID_FILE.exec(file);
    let raw: unknown;
    try {
      raw = yaml.parse(bytes.toString('utf8'), { uniqueKeys: true });
    } catch (err) {
      problems.push(`${ENGRAMS_DIR}/${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`);
      hash.addRaw(file, bytes);
      continue;
    }
    hash.add(file, raw);
    if (!m) {
      problems.push(`${ENGRAMS_DIR}/${file} is not an engram file (expected <id>.yaml)`);
      continue;
    }
    const check = validateEngram(structuredClone(raw));
    if (!check.ok) {
      problems.push(`${ENGRAMS_DIR}/${file} is not a valid engram: ${check.errors.join('; ')}`);
      continue;
    }
    if (check.engram.id !== m[1]) {
      problems.push(`${ENGRAMS_DIR}/${file} holds engram ${check.engram.id}, not ${m[1]}`);
      continue;
    }
    engrams.push({ file, engram: check.engram, raw });
  }
  const actual = hash.digest();
  const failures: string[] = [];
  if (actual !== manifest.integrity) {
    failures.push(
      `the engram files do not match the integrity hash in ${MANIFEST_FILE} (expected ${short(manifest.integrity)}, found ${short(actual)})`,
    );
  }
  if (files.length !== manifest.engram_count) {
    failures.push(`${MANIFEST_FILE} lists ${manifest.engram_count} engram(s) but ${ENGRAMS_DIR}/ holds ${files.length} file(s)`);
  }
  failures.push(...problems);
  return { dir, manifest, engrams, integrity: { ok: failures.length === 0, expected: manifest.integrity, actual, problems: failures } };
}

const short = (hash: string): string => (hash.length > 19 ? `${hash.slice(0, 19)}…` : hash);

function parseManifest(yaml: YamlModule, text: string, path: string): PackManifest {
  let value: unknown;
  try {
    value = yaml.parse(text, { uniqueKeys: true });
  } catch (err) {
    throw invalid(`${path} is not a valid pack manifest: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`${path} is not a valid pack manifest: it is not a mapping`);
  const m = value as Record<string, unknown>;
  const errors: string[] = [];
  if (m.format !== PACK_FORMAT) errors.push(`format: must be "${PACK_FORMAT}" (got ${JSON.stringify(m.format ?? null)})`);
  if (typeof m.name !== 'string' || checkPackName(m.name))
    errors.push(`name: ${typeof m.name === 'string' ? checkPackName(m.name) : 'is required'}`);
  if (!Number.isInteger(m.version) || (m.version as number) < 1) errors.push('version: must be a whole number of at least 1');
  if (!Number.isInteger(m.engram_count) || (m.engram_count as number) < 0) errors.push('engram_count: must be a whole number');
  if (typeof m.integrity !== 'string' || !/^sha256-[0-9a-f]{64}$/.test(m.integrity))
    errors.push('integrity: must be sha256-<64 hex digits>');
  for (const k of ['signer', 'signature'] as const)
    if (m[k] !== undefined && typeof m[k] !== 'string') errors.push(`${k}: must be a string`);
  if (errors.length) throw invalid(`${path} is not a valid pack manifest`, errors);
  return {
    format: PACK_FORMAT,
    name: m.name as string,
    version: m.version as number,
    description: typeof m.description === 'string' ? m.description : '',
    creator: typeof m.creator === 'string' ? m.creator : '',
    created_at: typeof m.created_at === 'string' ? m.created_at : '',
    engram_count: m.engram_count as number,
    integrity: m.integrity as string,
    ...(typeof m.signer === 'string' ? { signer: m.signer } : {}),
    ...(typeof m.signature === 'string' ? { signature: m.signature } : {}),
  };
}

/** The manifest of a folder if it holds one that parses, else null (used to refuse overwriting another pack); {} when unreadable or a link. */
export async function peekManifest(dir: string): Promise<Record<string, unknown> | null> {
  const kind = pathKind(join(dir, MANIFEST_FILE));
  if (kind === null) return null;
  if (kind !== 'file' || pathKind(dir) === 'link') return {};
  const { parse } = await import('yaml');
  try {
    const value = parse(readPackFile(dir, MANIFEST_FILE).toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
