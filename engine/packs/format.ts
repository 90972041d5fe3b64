import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { invalid } from '../errors.js';
import type { EngramDoc } from '../model/engram-schema.js';

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
//   <dir>/engrams/<id>.yaml     one engram per file, named by its id (ids keep the exporting
//                               store's prefix, so packs from different stores never collide)
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
}

/** One engram of a pack folder, validated (schema defaults filled in). */
export interface PackEngram {
  file: string;
  engram: EngramDoc;
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

/** JSON with object keys sorted and `undefined` dropped: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
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

/** Reads and checks a pack folder. Throws (invalid) when it is not a pack at all; integrity problems are reported, not thrown. */
export async function readPackFolder(dirArg: string): Promise<PackFolder> {
  const dir = resolve(dirArg);
  if (!existsSync(dir)) throw invalid(`no pack at ${dir}: the folder does not exist`);
  if (!statSync(dir).isDirectory()) throw invalid(`${dir} is not a pack: it is a file, not a folder`);
  const manifestPath = join(dir, MANIFEST_FILE);
  if (!existsSync(manifestPath)) throw invalid(`${dir} is not a pack: it has no ${MANIFEST_FILE}`);
  const yaml = await import('yaml');
  const manifest = parseManifest(yaml, readFileSync(manifestPath, 'utf8'), manifestPath);

  const { validateEngram } = await import('../model/validate-engram.js');
  const engramsDir = join(dir, ENGRAMS_DIR);
  const files = existsSync(engramsDir) ? readdirSync(engramsDir).sort() : [];
  const hash = new IntegrityHash();
  const engrams: PackEngram[] = [];
  const problems: string[] = [];
  for (const file of files) {
    const path = join(engramsDir, file);
    if (!statSync(path).isFile()) {
      problems.push(`${ENGRAMS_DIR}/${file} is not a file`);
      hash.addRaw(file, Buffer.from('(folder)'));
      continue;
    }
    const bytes = readFileSync(path);
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
    engrams.push({ file, engram: check.engram });
  }
  const actual = hash.digest();
  const failures: string[] = [];
  if (actual !== manifest.integrity) {
    failures.push(`the engram files do not match the integrity hash in ${MANIFEST_FILE} (expected ${short(manifest.integrity)}, found ${short(actual)})`);
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
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid(`${path} is not a valid pack manifest: it is not a mapping`);
  const m = value as Record<string, unknown>;
  const errors: string[] = [];
  if (m.format !== PACK_FORMAT) errors.push(`format: must be "${PACK_FORMAT}" (got ${JSON.stringify(m.format ?? null)})`);
  if (typeof m.name !== 'string' || checkPackName(m.name)) errors.push(`name: ${typeof m.name === 'string' ? checkPackName(m.name) : 'is required'}`);
  if (!Number.isInteger(m.version) || (m.version as number) < 1) errors.push('version: must be a whole number of at least 1');
  if (!Number.isInteger(m.engram_count) || (m.engram_count as number) < 0) errors.push('engram_count: must be a whole number');
  if (typeof m.integrity !== 'string' || !/^sha256-[0-9a-f]{64}$/.test(m.integrity)) errors.push('integrity: must be sha256-<64 hex digits>');
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
  };
}

/** The manifest of a folder if it holds one that parses, else null (used to refuse overwriting another pack). */
export async function peekManifest(dir: string): Promise<Record<string, unknown> | null> {
  const path = join(dir, MANIFEST_FILE);
  if (!existsSync(path)) return null;
  const { parse } = await import('yaml');
  try {
    const value = parse(readFileSync(path, 'utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
