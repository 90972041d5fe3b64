import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { QuarantinedFile } from './local-backend.js';
import type { FileStamp, SqliteIndex } from './sqlite-index.js';
import { createFileDurable, TEMP_PREFIX, writeFileDurable } from './durable-write.js';
import { newStorePrefix } from '../model/ids.js';
import { nodeCrypto } from '../lazy-crypto.js';
import { SvcError } from '../errors.js';
import { LATEST_STORE_VERSION } from './migrations.js';

// The local store's folder layout: where engrams, the quarantine and the machine's id prefix
// live, what a new store is given, and the file-system checks LocalStore makes on open. Kept
// apart from the class so reconcile, the logs and the write unit share one description of it.

/** The layout a new store gets (store migrations in ./migrations.ts move older ones up). */
export const STORE_LAYOUT_VERSION = LATEST_STORE_VERSION;
export const ENGRAM_EXT = '.yaml';

/** What LocalStore's helper modules need of an open store (the class owns and builds it). */
export interface StoreParts {
  readonly root: string;
  readonly engramsDir: string;
  readonly quarantineDir: string;
  /** Why this store cannot be written here, or undefined when it can. */
  readonly readOnly: string | undefined;
  /** Things the caller should tell the user; helpers append to it. */
  readonly warnings: string[];
  readonly index: SqliteIndex;
}

const GITIGNORE = `# Derived or machine-local: never committed.
index.db*
local.yaml
pack-keys.yaml
logs/
models/
remote/
quarantine/
backups/
bin/
.tmp-*
`;

/** First open of a store (or of a fresh clone): git repository, config and this machine's id prefix. */
export async function initLayout(root: string): Promise<void> {
  if (!existsSync(join(root, '.git'))) {
    const [{ default: git }, fs] = await Promise.all([import('isomorphic-git'), import('node:fs')]);
    await git.init({ fs, dir: root, defaultBranch: 'main' });
  }
  if (!existsSync(join(root, '.gitignore'))) writeFileDurable(join(root, '.gitignore'), GITIGNORE);
  if (!existsSync(join(root, 'config.yaml'))) {
    writeFileDurable(join(root, 'config.yaml'), `store_version: ${STORE_LAYOUT_VERSION}\n`);
  }
  // local.yaml is written last: its presence means the layout is complete.
  createFileDurable(
    join(root, 'local.yaml'),
    `# This machine's copy of the store.\nid_prefix: ${newStorePrefix((n) => nodeCrypto().randomBytes(n))}\n`,
  );
}

/** This machine's id prefix, from local.yaml. */
export function readIdPrefix(root: string): string {
  const text = readFileSync(join(root, 'local.yaml'), 'utf8');
  const m = /^id_prefix:\s*([A-Z][A-Z0-9]+)\s*$/m.exec(text);
  if (!m) throw new SvcError('storage', `local.yaml in ${root} has no valid id_prefix`);
  return m[1]!;
}

/** The files moved aside by reconcile, each with the reason recorded beside it. */
export function listQuarantined(quarantineDir: string): QuarantinedFile[] {
  if (!existsSync(quarantineDir)) return [];
  return readdirSync(quarantineDir)
    .filter((f) => !f.endsWith('.reason.txt'))
    .sort()
    .map((file) => {
      const reasonPath = join(quarantineDir, `${file}.reason.txt`);
      const reason = existsSync(reasonPath) ? readFileSync(reasonPath, 'utf8').trim() : 'unknown';
      return { file: join(quarantineDir, file), reason };
    });
}

export function dirMtime(engramsDir: string): string {
  return String(statSync(engramsDir).mtimeMs);
}

export function engramFiles(engramsDir: string): string[] {
  return readdirSync(engramsDir).filter((f) => f.endsWith(ENGRAM_EXT) && !f.startsWith(TEMP_PREFIX));
}

export function stampOf(path: string): FileStamp {
  const st = statSync(path);
  return { mtime: st.mtimeMs, size: st.size };
}

export function countEntries(dir: string, ext = ''): number {
  return existsSync(dir) ? readdirSync(dir).filter((f) => !f.startsWith('.') && f.endsWith(ext)).length : 0;
}

export const DISK_FULL = 'its disk is full';

/** Why a store folder cannot be written here (a read-only mount, no permission), or undefined. */
export function unwritable(root: string): string | undefined {
  if (!existsSync(root)) return undefined;
  try {
    accessSync(root, constants.W_OK);
    return undefined;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EROFS' ? 'a read-only file system' : 'no permission to write it';
  }
}

/**
 * Creates a folder and its missing parents one level at a time. (mkdirSync's recursive mode
 * loops for ever where mkdir answers ENOENT for a parent that exists, as in /proc.)
 */
export function makeDirs(dir: string): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirs(parent);
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new SvcError('storage', `cannot create the folder ${dir}: ${(err as Error).message}`);
  }
}
