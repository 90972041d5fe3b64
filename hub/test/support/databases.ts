import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openDatabase } from '../../data/database.js';
import type { Database } from '../../contracts.js';
import { adminQuery, databaseUrl, SERVER } from './pg-server.js';

// The databases the hub suites run on: PGlite (always) and the PostgreSQL server at
// SVC_TEST_DATABASE_URL (default 127.0.0.1:5432, database `test`). Each test file gets its own
// fresh database, copied from the migrated template that global-setup.ts built once for the run,
// so parallel files never see each other. An unreachable server skips the PostgreSQL runs with a
// warning, unless SVC_REQUIRE_PG=1 (CI), where it fails.

export type DatabaseKind = 'pglite' | 'postgres';

const reachable = inject('postgresReachable');
if (!reachable) {
  if (process.env.SVC_REQUIRE_PG === '1') throw new Error(`PostgreSQL at ${SERVER} is unreachable and SVC_REQUIRE_PG=1`);
  console.warn(`hub tests: PostgreSQL at ${SERVER} is unreachable; running on PGlite only`);
}

/** The kinds to parameterize a suite over (`describe.each(DATABASES)`). */
export const DATABASES: DatabaseKind[] = reachable ? ['pglite', 'postgres'] : ['pglite'];

export interface TestDatabase {
  db: Database;
  /** How another process reaches it: a URL (PostgreSQL) or a data folder (PGlite, once closed). */
  url?: string;
  dataDir?: string;
  close(): Promise<void>;
}

/** A fresh, migrated database of that kind. */
export async function freshDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  if (kind === 'pglite') {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'svc-hub-pglite-')), 'data');
    cpSync(inject('pgliteTemplate'), dataDir, { recursive: true });
    const db = await openDatabase({ dataDir, shortLived: true });
    return { db, dataDir, close: () => db.close() };
  }
  const name = `svc_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${inject('postgresTemplate')}`);
  const url = databaseUrl(name);
  const db = await openDatabase({ url });
  return {
    db,
    url,
    async close() {
      await db.close();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
