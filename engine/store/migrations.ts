import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';
import { contentHash } from '../model/content-hash.js';
import { invalid, SvcError } from '../errors.js';
import { fsyncDir, TEMP_PREFIX, writeFileDurable } from './durable-write.js';

// Versioned migrations of the local store's layout (documented in migrations/store/README.md).
// `config.yaml` records `store_version`; a store without it (or without config.yaml) is version 1.
//
// The policy on open (see storeVersionStatus / assertStoreWritable):
// - a store NEWER than this build knows is never written: upgrade svc;
// - an OLDER store keeps working (every migration so far is `compatible`: this build reads and
//   writes the older layout correctly), and the user is told to run `svc migrate`. Migrations are
//   not applied on open: they rewrite many files and take a backup, which belongs in a deliberate
//   command, not in a hook that runs on every prompt with a latency budget.
//
// This module is imported by the store's open path, so it stays cheap: no YAML parser or SQLite
// at import time (both are loaded lazily by the commands that migrate).

/** The newest store layout this build knows (and writes for a new store). */
export const LATEST_STORE_VERSION = 2;
export const CONFIG_FILE = 'config.yaml';
export const BACKUPS_DIR = 'backups';

export interface StoreMigration {
  /** The version this migration brings the store to (from version - 1). */
  version: number;
  name: string;
  description: string;
  /**
   * A store one version older stays readable and writable by this build, so it is not refused
   * before it is migrated (only reminded).
   */
  compatible: boolean;
  up(ctx: MigrationContext): Promise<StepReport>;
  down(ctx: MigrationContext): Promise<StepReport>;
}

export interface MigrationContext {
  root: string;
  /** Messages for the user: files skipped and why. */
  warnings: string[];
}

export interface StepReport {
  version: number;
  name: string;
  direction: 'up' | 'down';
  /** Files rewritten by this step (paths relative to the store). */
  changed: string[];
  /** Files left alone because they could not be read as an engram; the store quarantines those on open. */
  skipped: Array<{ file: string; reason: string }>;
}

export type VersionState = 'current' | 'older' | 'newer';

export interface StoreVersionStatus {
  root: string;
  current: number;
  latest: number;
  state: VersionState;
  /** Migrations `migrate up` would apply, oldest first. */
  pending: Array<{ version: number; name: string; description: string }>;
  /** What to tell the user when the state is not `current`. */
  message?: string;
}

export interface MigrationRun {
  root: string;
  direction: 'up' | 'down';
  from: number;
  to: number;
  /** The backup taken before anything changed; absent when there was nothing to do. */
  backup?: string;
  steps: StepReport[];
  warnings: string[];
}

// ---------------------------------------------------------------- the migrations

const ENGRAM_EXT = '.yaml';

/** v2: every engram file carries the hash of its statement and its document schema version. */
const contentHashes: StoreMigration = {
  version: 2,
  name: 'content-hashes',
  description:
    'every engram file gets content_hash recomputed from its statement (missing, or stale after a hand edit) and version: 2 where it has none',
  compatible: true,
  async up(ctx) {
    const { parseDocument, isMap } = await import('yaml');
    const report: StepReport = { version: 2, name: this.name, direction: 'up', changed: [], skipped: [] };
    const dir = join(ctx.root, 'engrams');
    if (!existsSync(dir)) return report;
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith(ENGRAM_EXT) && !f.startsWith(TEMP_PREFIX))
      .sort()) {
      const rel = `engrams/${file}`;
      const path = join(dir, file);
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (err) {
        report.skipped.push({ file: rel, reason: `unreadable: ${(err as Error).message}` });
        continue;
      }
      // The Document API keeps comments, key order and quoting of everything we do not touch.
      const doc = parseDocument(text, { uniqueKeys: true });
      if (doc.errors.length > 0 || !isMap(doc.contents)) {
        report.skipped.push({ file: rel, reason: doc.errors[0]?.message.split('\n')[0] ?? 'not a mapping' });
        continue;
      }
      const statement = doc.get('statement');
      if (typeof statement !== 'string' || statement.trim() === '') {
        report.skipped.push({ file: rel, reason: 'no statement' });
        continue;
      }
      let touched = false;
      const hash = contentHash(statement);
      if (doc.get('content_hash') !== hash) {
        doc.set('content_hash', hash);
        touched = true;
      }
      if (!doc.has('version')) {
        doc.set('version', 2);
        touched = true;
      }
      if (!touched) continue;
      writeFileDurable(path, doc.toString({ lineWidth: 0 }));
      report.changed.push(rel);
    }
    for (const s of report.skipped) ctx.warnings.push(`left ${s.file} as it is: ${s.reason}`);
    return report;
  },
  async down() {
    // Version 1 stores accept both keys (they are part of the engram model): only the recorded
    // store_version goes back. Nothing is removed, so nothing is lost.
    return { version: 2, name: this.name, direction: 'down', changed: [], skipped: [] };
  },
};

/** Index i holds the migration to version i + 2 (version 1 is the baseline layout). */
export const STORE_MIGRATIONS: readonly StoreMigration[] = [contentHashes];

// ---------------------------------------------------------------- reading and gating the version

/** The store's recorded layout version: 1 when config.yaml or its store_version key is absent. */
export function readStoreVersion(root: string): number {
  const path = join(root, CONFIG_FILE);
  if (!existsSync(path)) return 1;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SvcError('storage', `cannot read ${path}: ${(err as Error).message}`);
  }
  // A regex, not a YAML parser: this runs on every open and must stay cheap.
  const line = /^store_version\s*:(.*)$/m.exec(text);
  if (!line) return 1;
  const value = line[1]!
    .replace(/\s#.*$/, '')
    .trim()
    .replace(/^(['"])(.*)\1$/, '$2');
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    throw new SvcError('storage', `${path} has an invalid store_version "${value}" (expected a whole number from 1)`);
  }
  return Number(value);
}

export function storeVersionStatus(root: string): StoreVersionStatus {
  const current = readStoreVersion(root);
  const latest = LATEST_STORE_VERSION;
  const state: VersionState = current === latest ? 'current' : current < latest ? 'older' : 'newer';
  const pending = STORE_MIGRATIONS.filter((m) => m.version > current).map(({ version, name, description }) => ({
    version,
    name,
    description,
  }));
  const status: StoreVersionStatus = { root, current, latest, state, pending };
  if (state === 'newer') status.message = tooNewMessage(root, current);
  if (state === 'older')
    status.message = `the store at ${root} is at version ${current} (latest ${latest}): run \`svc migrate\` to upgrade it (a backup is taken first)`;
  return status;
}

function tooNewMessage(root: string, current: number): string {
  return `the store at ${root} is at version ${current}, newer than this svc knows (${LATEST_STORE_VERSION}): upgrade svc to write to it`;
}

/**
 * Throws unless this build may write to the store: a store newer than LATEST_STORE_VERSION is
 * refused (its files may carry meaning this build would destroy), as is an older one whose pending
 * migrations are not `compatible`. Cheap (one small file read): call it before every write.
 */
export function assertStoreWritable(root: string): void {
  const status = storeVersionStatus(root);
  if (status.state === 'newer') throw new SvcError('storage', status.message!);
  const blocking = STORE_MIGRATIONS.filter((m) => m.version > status.current && !m.compatible);
  if (blocking.length > 0) {
    throw new SvcError(
      'storage',
      `the store at ${root} is at version ${status.current} and must be migrated before it is written: run \`svc migrate\``,
    );
  }
}

/** One line for the user when the store is not at the latest version (older or newer), else undefined. */
export function storeVersionNotice(root: string): string | undefined {
  return storeVersionStatus(root).message;
}

// ---------------------------------------------------------------- running migrations

export interface MigrateOptions {
  /** For backup folder names; defaults to now. */
  now?: Date;
}

/** Applies every pending migration (a backup first). Does nothing, and takes no backup, when current. */
export async function migrateUp(root: string, opts: MigrateOptions = {}): Promise<MigrationRun> {
  return migrateTo(root, LATEST_STORE_VERSION, 'up', opts);
}

/** Rolls back to `target` (1 <= target <= current), newest migration first, after a backup. */
export async function migrateDown(root: string, target: number, opts: MigrateOptions = {}): Promise<MigrationRun> {
  if (!Number.isInteger(target) || target < 1) throw invalid(`the version to roll back to must be a whole number from 1 (got "${target}")`);
  if (target > LATEST_STORE_VERSION)
    throw invalid(`this svc knows store versions 1 to ${LATEST_STORE_VERSION}; cannot roll back to ${target}`);
  return migrateTo(root, target, 'down', opts);
}

async function migrateTo(root: string, target: number, direction: 'up' | 'down', opts: MigrateOptions): Promise<MigrationRun> {
  assertStoreExists(root);
  // Checked before locking (a newer store is not touched at all) and again under the lock.
  const seen = readStoreVersion(root);
  if (seen > LATEST_STORE_VERSION) throw new SvcError('storage', tooNewMessage(root, seen));
  return withStoreLock(root, async () => {
    // Read under the lock: another `svc migrate` may have just finished.
    const from = readStoreVersion(root);
    if (from > LATEST_STORE_VERSION) throw new SvcError('storage', tooNewMessage(root, from));
    const run: MigrationRun = { root, direction, from, to: from, steps: [], warnings: [] };
    if (direction === 'down' && target > from) {
      throw invalid(`the store is at version ${from}; \`migrate down ${target}\` cannot go up (use \`svc migrate up\`)`);
    }
    if (target === from) return run;
    const steps =
      direction === 'up'
        ? STORE_MIGRATIONS.filter((m) => m.version > from && m.version <= target)
        : STORE_MIGRATIONS.filter((m) => m.version <= from && m.version > target).reverse();
    run.backup = backupStore(root, `migrate ${direction} ${from} -> ${target}`, opts.now ?? new Date(), from);
    const ctx: MigrationContext = { root, warnings: run.warnings };
    for (const step of steps) {
      run.steps.push(direction === 'up' ? await step.up(ctx) : await step.down(ctx));
      // Recorded after each step: a crash leaves the store at the last completed version, and
      // every step is idempotent, so running `migrate` again finishes the job.
      const reached = direction === 'up' ? step.version : step.version - 1;
      writeStoreVersion(root, reached);
      run.to = reached;
    }
    return run;
  });
}

function assertStoreExists(root: string): void {
  if (!existsSync(join(root, CONFIG_FILE)) && !existsSync(join(root, 'engrams'))) {
    throw new SvcError('storage', `no store at ${root} (no ${CONFIG_FILE} and no engrams/ folder)`);
  }
}

/** Sets store_version in config.yaml, keeping every other key and comment. */
export function writeStoreVersion(root: string, version: number): void {
  const path = join(root, CONFIG_FILE);
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const line = `store_version: ${version}`;
  const next = /^store_version\s*:.*$/m.test(text) ? text.replace(/^store_version\s*:.*$/m, line) : `${line}\n${text}`;
  writeFileDurable(path, next.endsWith('\n') ? next : `${next}\n`);
}

/**
 * Holds the store's cross-process write lock (`BEGIN IMMEDIATE` on index.db, the lock every
 * LocalStore writer takes) while `fn` runs, so no learn or hook writes mid-migration.
 */
async function withStoreLock<T>(root: string, fn: () => Promise<T>): Promise<T> {
  const { openSqlite } = await import('./sqlite-open.js');
  let db: ReturnType<typeof openSqlite> | undefined;
  try {
    db = openSqlite(join(root, 'index.db'), { timeout: 60_000 });
    db.exec('BEGIN IMMEDIATE');
  } catch (err) {
    db?.close();
    const code = (err as { code?: string }).code ?? '';
    // A damaged index is set aside and rebuilt by the next open; it cannot lock, but nothing
    // else can write through it either.
    if (!/^SQLITE_(NOTADB|CORRUPT)/.test(code))
      throw new SvcError('storage', `cannot lock the store at ${root}: ${(err as Error).message}`);
    return fn();
  }
  try {
    return await fn();
  } finally {
    if (db.inTransaction) db.exec('COMMIT');
    db.close();
  }
}

// ---------------------------------------------------------------- backups

/** Top-level entries that are derived or machine-local (the store's .gitignore): never backed up. */
const NOT_BACKED_UP = new Set(['.git', BACKUPS_DIR, 'models', 'quarantine', 'bin', 'local.yaml']);

function backedUp(entry: string): boolean {
  return !NOT_BACKED_UP.has(entry) && !entry.startsWith('index.db') && !entry.startsWith(TEMP_PREFIX);
}

/**
 * Copies the store's tracked files (engrams, episodes, events, sessions, config and whatever
 * else sits beside them under git: tensions, packs, outbox) into `backups/<timestamp>/`, with a
 * `backup.json` manifest. Returns the backup folder.
 */
export function backupStore(root: string, reason: string, now: Date = new Date(), storeVersion = readStoreVersion(root)): string {
  const backups = join(root, BACKUPS_DIR);
  mkdirSync(backups, { recursive: true });
  // Belt and braces: the store's .gitignore lists backups/, but an old or hand-made store may not.
  if (!existsSync(join(backups, '.gitignore')))
    writeFileDurable(join(backups, '.gitignore'), '# Backups taken by svc migrate: never committed.\n*\n');
  const stamp = now.toISOString().replace(/[:.]/g, '-');
  let dest = join(backups, stamp);
  for (let n = 2; existsSync(dest); n++) dest = join(backups, `${stamp}-${n}`);
  mkdirSync(dest);
  let files = 0;
  for (const entry of readdirSync(root).filter(backedUp).sort()) files += copyDurable(join(root, entry), join(dest, entry));
  fsyncDir(dest);
  const manifest = { created_at: now.toISOString(), reason, store: root, store_version: storeVersion, files };
  writeFileDurable(join(dest, 'backup.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  fsyncDir(backups);
  return dest;
}

/** Copies a file or folder tree, each file fsynced (a backup must survive what follows it); returns the file count. */
function copyDurable(src: string, dest: string): number {
  const st = statSync(src);
  if (st.isDirectory()) {
    mkdirSync(dest);
    let n = 0;
    for (const entry of readdirSync(src).sort()) if (!entry.startsWith(TEMP_PREFIX)) n += copyDurable(join(src, entry), join(dest, entry));
    fsyncDir(dest);
    return n;
  }
  if (!st.isFile()) return 0; // sockets, fifos: nothing svc writes
  copyFileSync(src, dest, constants.COPYFILE_EXCL);
  const fd = openSync(dest, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  utimesSync(dest, st.atime, st.mtime);
  return 1;
}
