import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { conflict, invalid, SvcError } from '../../engine/errors.js';
import type { Output } from '../../engine/cli/cli-kit.js';
import { writeFileDurable } from '../../engine/store/durable-write.js';

// `svc hub backup --data DIR --out FILE` and `svc hub restore FILE --data DIR`: the embedded
// (PGlite) database as one checked archive (hub/data/pglite-archive.ts).
//
// A PGlite database lives in the memory of the one process that has its folder open, so no other
// process can read a consistent copy of it while a hub runs: backup takes the folder's lock and
// refuses, naming the hub's pid, when a hub holds it. Stopping the hub for the copy takes seconds;
// a hub that must not stop runs on PostgreSQL, whose pg_dump copies it while it serves.
// Restore checks the whole archive (format line, length, SHA-256) before it touches anything,
// unpacks into a new folder beside the target, opens it and compares every table's row count with
// the archive's, and only then puts it in place; an occupied target needs --force.

const PG_DUMP_HINT =
  'this hub runs on PostgreSQL (DATABASE_URL): back it up with pg_dump --format=custom --file <file> "$DATABASE_URL" and restore with pg_restore --no-owner --dbname <new database URL> <file> (README: Backups)';

export async function backup(flags: { data: string; out?: string; force?: boolean }, out: Output): Promise<number> {
  if (process.env.DATABASE_URL) throw invalid(PG_DUMP_HINT);
  if (!flags.out) throw invalid('usage: svc hub backup --data <dir> --out <file>');
  const target = resolve(flags.out);
  if (existsSync(target) && !flags.force) throw conflict(`${flags.out} exists: name a new file, or add --force to replace it`);
  if (!existsSync(flags.data)) throw invalid(`no data folder ${flags.data}`);
  const { archiveDataFolder, BadArchive } = await import('../data/pglite-archive.js');
  const { DataFolderInUse } = await import('../data/database.js');
  let made;
  try {
    made = await archiveDataFolder(flags.data, 'svc hub backup');
  } catch (err) {
    if (err instanceof DataFolderInUse)
      throw conflict(
        `${err.holder} (pid ${err.pid}) is running on the data folder ${flags.data}: stop it for the backup (PGlite keeps the database in that process's memory, so a copy taken beside it would not be consistent), or run the hub on PostgreSQL and back it up with pg_dump while it serves`,
      );
    if (err instanceof BadArchive) throw invalid(err.message);
    throw err;
  }
  mkdirSync(dirname(target), { recursive: true });
  writeFileDurable(target, made.bytes, { mode: 0o600 });
  const { header } = made;
  const rows = Object.values(header.tables).reduce((a, b) => a + b, 0);
  out.result(
    { file: target, bytes: made.bytes.length, sha256: header.payload_sha256, tables: header.tables, created_at: header.created_at },
    () =>
      `Backed up ${flags.data} to ${target}: ${Object.keys(header.tables).length} tables, ${rows} rows, ${made.bytes.length} bytes (sha256 ${header.payload_sha256.slice(0, 16)}…). It holds the hub's generated keys: keep it as safe as the database.`,
  );
  return 0;
}

export async function restore(args: string[], flags: { data: string; force?: boolean }, out: Output): Promise<number> {
  if (process.env.DATABASE_URL) throw invalid(PG_DUMP_HINT);
  const [file] = args;
  if (!file || args.length !== 1) throw invalid('usage: svc hub restore <file> --data <dir> [--force]');
  if (!existsSync(file)) throw invalid(`no file ${file}`);
  const { readArchive, loadDataFolder, BadArchive, LOCK_FILE } = await import('../data/pglite-archive.js');
  const { lockDataDir, DataFolderInUse } = await import('../data/database.js');
  // The archive first, whole: nothing is touched for a file that is not one, or is damaged.
  let archive;
  try {
    archive = readArchive(readFileSync(file));
  } catch (err) {
    if (err instanceof BadArchive) throw invalid(`${file} cannot be restored: ${err.message}`);
    throw err;
  }
  const dataDir = resolve(flags.data);
  const occupied = existsSync(dataDir) ? readdirSync(dataDir).filter((n) => n !== LOCK_FILE) : [];
  if (occupied.length && !flags.force)
    throw conflict(
      `the data folder ${flags.data} is not empty: restore into a new or empty folder, or add --force to replace its database`,
    );
  // Held for the whole restore: no hub starts on the folder meanwhile, and none runs on it now.
  let unlock: () => void;
  try {
    unlock = lockDataDir(dataDir, 'svc hub restore');
  } catch (err) {
    if (err instanceof DataFolderInUse)
      throw conflict(`${err.holder} (pid ${err.pid}) is running on the data folder ${flags.data}: stop it before restoring into it`);
    throw err;
  }
  const staging = join(dirname(dataDir), `.${basename(dataDir)}.restoring-${process.pid}`);
  try {
    rmSync(staging, { recursive: true, force: true });
    let counts: Record<string, number>;
    try {
      counts = await loadDataFolder(staging, archive.payload, 'svc hub restore');
    } catch (err) {
      if (err instanceof BadArchive) throw invalid(`${file} cannot be restored: ${err.message}`);
      throw new SvcError('storage', `${file} could not be opened as a hub database: ${(err as Error).message.split('\n')[0]}`);
    }
    const differ = Object.keys({ ...archive.header.tables, ...counts }).filter((t) => archive.header.tables[t] !== counts[t]);
    if (differ.length)
      throw new SvcError(
        'storage',
        `the restored copy does not hold what ${file} says it does (${differ
          .slice(0, 3)
          .map((t) => `${t}: ${counts[t] ?? 'missing'} rows, expected ${archive.header.tables[t] ?? 'none'}`)
          .join('; ')}): ${flags.data} was left as it was`,
      );
    // Proven: replace the folder's database (the models svc hub keeps there stay).
    for (const name of occupied) if (name !== 'models') rmSync(join(dataDir, name), { recursive: true, force: true });
    for (const name of readdirSync(staging)) if (name !== LOCK_FILE) renameSync(join(staging, name), join(dataDir, name));
    const rows = Object.values(counts).reduce((a, b) => a + b, 0);
    out.result(
      { data: dataDir, from: resolve(file), created_at: archive.header.created_at, tables: counts, replaced: occupied.length > 0 },
      () =>
        `Restored ${file} (taken ${archive.header.created_at}) into ${flags.data}: ${Object.keys(counts).length} tables, ${rows} rows, every count as backed up. Start the hub with the same SVC_HUB_* keys it had (README: Backups).`,
    );
    return 0;
  } finally {
    rmSync(staging, { recursive: true, force: true });
    unlock();
  }
}
