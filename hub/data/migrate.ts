import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../engine/package-info.js';
import { CONTROL_SCHEMA, ident } from './sql.js';
import type { Database, Queryable } from '../contracts.js';

// Numbered SQL migrations: migrations/hub/control (the svc_hub schema) and migrations/hub/org
// (run once per organization with search_path set to its schema, so the SQL names no schema).
// Each run holds a transaction-scoped advisory lock, so hub processes starting together on one
// database take turns and the second finds nothing to do.

interface Migration {
  version: number;
  name: string;
  sql: string;
}

const cache = new Map<string, Migration[]>();

export function loadMigrations(kind: 'control' | 'org'): Migration[] {
  let list = cache.get(kind);
  if (!list) {
    const dir = join(packageRoot(), 'migrations', 'hub', kind);
    list = readdirSync(dir)
      .filter((f) => /^\d{3}-[a-z0-9-]+\.sql$/.test(f))
      .sort()
      .map((f) => ({ version: Number(f.slice(0, 3)), name: f.slice(4, -4), sql: readFileSync(join(dir, f), 'utf8') }));
    cache.set(kind, list);
  }
  return list;
}

async function applyAll(q: Queryable, schema: string, migrations: Migration[]): Promise<number> {
  // Lock key per schema: migrating one organization never waits for another.
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc_hub:migrate:${schema}`]);
  await q.exec(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)};
    CREATE TABLE IF NOT EXISTS ${ident(schema)}.schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  const done = new Set(
    (await q.query<{ version: number }>(`SELECT version FROM ${ident(schema)}.schema_migrations`)).rows.map((r) => Number(r.version)),
  );
  let applied = 0;
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    await q.exec(`SET LOCAL search_path TO ${ident(schema)}, public;\n${m.sql}`);
    await q.query(`INSERT INTO ${ident(schema)}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    applied++;
  }
  return applied;
}

/** Brings the control schema and one organization's schema up to date; returns migrations applied. */
export async function migrateSchema(db: Database, schema: string, kind: 'control' | 'org'): Promise<number> {
  return db.transaction((q) => applyAll(q, schema, loadMigrations(kind)));
}

/** Migrates the control schema, then every organization. Safe to run from several processes at once. */
export async function migrateHub(db: Database): Promise<{ control: number; orgs: Record<string, number> }> {
  const control = await migrateSchema(db, CONTROL_SCHEMA, 'control');
  const orgs: Record<string, number> = {};
  const rows = (
    await db.query<{ slug: string; schema_name: string }>(`SELECT slug, schema_name FROM ${CONTROL_SCHEMA}.organizations ORDER BY slug`)
  ).rows;
  for (const r of rows) orgs[r.slug] = await migrateSchema(db, r.schema_name, 'org');
  return { control, orgs };
}
