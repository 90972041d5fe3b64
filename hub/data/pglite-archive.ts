import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import { lockDataDir, pgliteStart } from './database.js';

/** The folder's lock file (database.ts lockDataDir): never archived, never restored. */
export const LOCK_FILE = 'svc-hub.lock';

// A PGlite data folder as one archive: a gzipped tar of the folder, taken after PGlite closed it
// cleanly and while the folder's lock keeps any hub off it, behind a header
// line that names the format and holds the tarball's length and SHA-256 and the row count of
// every table. A restore checks all of it before it touches a folder, and the counts again after.
//
//   svc-hub-backup 1\n
//   {"format":"svc-hub-backup","version":1,...,"payload_bytes":N,"payload_sha256":"…","tables":{…}}\n
//   <N bytes: the gzipped tar of the data folder>

export const ARCHIVE_MAGIC = 'svc-hub-backup 1\n';

export interface ArchiveHeader {
  format: 'svc-hub-backup';
  version: 1;
  created_at: string;
  /** The PGlite release that wrote it (the folder's format follows PostgreSQL's major version). */
  pglite: string;
  payload_bytes: number;
  payload_sha256: string;
  /** schema.table → rows, every table outside the system schemas. */
  tables: Record<string, number>;
}

/** Why a file is not a backup this hub can restore: one line. */
export class BadArchive extends Error {
  override name = 'BadArchive';
}

async function pgliteVersion(): Promise<string> {
  const { createRequire } = await import('node:module');
  try {
    return (createRequire(import.meta.url)('@electric-sql/pglite/package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Rows of every table outside the system schemas. */
export async function tableCounts(query: (sql: string) => Promise<{ rows: unknown[] }>): Promise<Record<string, number>> {
  const { rows } = (await query(
    `SELECT schemaname, tablename FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
  )) as { rows: Array<{ schemaname: string; tablename: string }> };
  const counts: Record<string, number> = {};
  for (const t of rows) {
    const name = `${JSON.stringify(t.schemaname)}.${JSON.stringify(t.tablename)}`;
    const r = (await query(`SELECT count(*)::int AS n FROM ${name}`)) as { rows: Array<{ n: number }> };
    counts[`${t.schemaname}.${t.tablename}`] = r.rows[0]!.n;
  }
  return counts;
}

/** Not the database: the folder's lock, and the models svc hub keeps beside it (fetched again on demand). */
const NOT_ARCHIVED = new Set([LOCK_FILE, 'models']);

/**
 * The archive of a hub's PGlite folder. Locks the folder for the copy (DataFolderInUse when a hub
 * or a command has it open: PGlite keeps its database in that process's memory, so a copy taken
 * beside it would not be consistent), opens it once (recovering a folder a killed hub left),
 * counts its rows, closes it cleanly, and tars the closed folder.
 */
export async function archiveDataFolder(dataDir: string, holder: string): Promise<{ header: ArchiveHeader; bytes: Buffer }> {
  if (!existsSync(join(dataDir, 'PG_VERSION'))) throw new BadArchive(`${dataDir} holds no hub database (no PG_VERSION)`);
  const unlock = lockDataDir(dataDir, holder);
  try {
    const db = await pgliteStart(dataDir);
    let tables: Record<string, number>;
    try {
      tables = await tableCounts((sql) => db.query(sql));
    } finally {
      await db.close();
    }
    const tar = await import('tar');
    const entries = readdirSync(dataDir).filter((name) => !NOT_ARCHIVED.has(name));
    const chunks: Buffer[] = [];
    await pipeline(tar.c({ cwd: dataDir, gzip: true, portable: true }, entries) as unknown as NodeJS.ReadableStream, async (source) => {
      for await (const chunk of source) chunks.push(chunk as Buffer);
    });
    const payload = Buffer.concat(chunks);
    const header: ArchiveHeader = {
      format: 'svc-hub-backup',
      version: 1,
      created_at: new Date().toISOString(),
      pglite: await pgliteVersion(),
      payload_bytes: payload.length,
      payload_sha256: createHash('sha256').update(payload).digest('hex'),
      tables,
    };
    return { header, bytes: Buffer.concat([Buffer.from(ARCHIVE_MAGIC + JSON.stringify(header) + '\n'), payload]) };
  } finally {
    unlock();
  }
}

/** The header and tarball of an archive, checked: its format line, its header, its length and its SHA-256. */
export function readArchive(bytes: Buffer): { header: ArchiveHeader; payload: Buffer } {
  if (!bytes.subarray(0, ARCHIVE_MAGIC.length).equals(Buffer.from(ARCHIVE_MAGIC)))
    throw new BadArchive('it is not a svc hub backup (no "svc-hub-backup 1" line at its start)');
  const end = bytes.indexOf(0x0a, ARCHIVE_MAGIC.length);
  if (end < 0) throw new BadArchive('its header is cut short');
  let header: ArchiveHeader;
  try {
    header = JSON.parse(bytes.subarray(ARCHIVE_MAGIC.length, end).toString('utf8')) as ArchiveHeader;
  } catch {
    throw new BadArchive('its header is not JSON');
  }
  if (header.format !== 'svc-hub-backup' || header.version !== 1 || typeof header.payload_sha256 !== 'string' || !header.tables)
    throw new BadArchive('its header is not one this hub reads (format svc-hub-backup, version 1)');
  const payload = bytes.subarray(end + 1);
  if (payload.length !== header.payload_bytes)
    throw new BadArchive(
      `it is ${payload.length < header.payload_bytes ? 'cut short' : 'longer than it says'}: ${payload.length} bytes of data, the header says ${header.payload_bytes}`,
    );
  if (createHash('sha256').update(payload).digest('hex') !== header.payload_sha256)
    throw new BadArchive('its checksum does not match: the file was changed or damaged after it was written');
  return { header, payload };
}

/**
 * Unpacks an archive's tarball into dataDir (a new, empty folder), opens it with PGlite and
 * returns its row counts: the caller compares them with the header's.
 */
export async function loadDataFolder(dataDir: string, payload: Buffer, holder: string): Promise<Record<string, number>> {
  const tar = await import('tar');
  mkdirSync(dataDir, { recursive: true });
  await pipeline(Readable.from([payload]), tar.x({ cwd: dataDir, strict: true, preservePaths: false }) as unknown as NodeJS.WritableStream);
  if (!existsSync(join(dataDir, 'PG_VERSION'))) throw new BadArchive('it holds no PostgreSQL data folder (no PG_VERSION)');
  const unlock = lockDataDir(dataDir, holder);
  try {
    const db = await pgliteStart(dataDir);
    try {
      return await tableCounts((sql) => db.query(sql));
    } finally {
      await db.close();
    }
  } finally {
    unlock();
  }
}
