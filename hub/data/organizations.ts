import { randomBytes, randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../../engine/errors.js';
import { newStorePrefix } from '../../engine/model/ids.js';
import type { Database, Org, Queryable } from '../contracts.js';
import { migrateSchema } from './migrate.js';
import { CONTROL_SCHEMA } from './sql.js';

// Organizations: each has its own PostgreSQL schema, named from its slug.

const SLUG = /^[a-z0-9][a-z0-9-]{1,38}$/;

export function checkSlug(slug: string): void {
  if (!SLUG.test(slug)) {
    throw invalid(
      `organization slug "${slug}" is invalid: 2 to 39 characters, lowercase letters, digits and "-", starting with a letter or digit`,
    );
  }
}

interface OrgRow {
  id: string;
  slug: string;
  schema_name: string;
  id_prefix: string;
}

const toOrg = (r: OrgRow): Org => ({ id: r.id, slug: r.slug, schema: r.schema_name, idPrefix: r.id_prefix });

/** Creates an organization and its schema (migrated). A taken slug is a conflict. */
export async function createOrg(db: Database, slug: string): Promise<Org> {
  checkSlug(slug);
  const schema = `org_${slug.replace(/-/g, '_')}`;
  const row: OrgRow = { id: randomUUID(), slug, schema_name: schema, id_prefix: newStorePrefix(randomBytes) };
  const inserted = await db.query<OrgRow>(
    `INSERT INTO ${CONTROL_SCHEMA}.organizations (id, slug, schema_name, id_prefix) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING id, slug, schema_name, id_prefix`,
    [row.id, row.slug, row.schema_name, row.id_prefix],
  );
  if (inserted.rows.length === 0) throw conflict(`organization "${slug}" exists already`);
  await migrateSchema(db, schema, 'org');
  return toOrg(row);
}

export async function findOrg(db: Database, slug: string): Promise<Org | null> {
  const r = await db.query<OrgRow>(`SELECT id, slug, schema_name, id_prefix FROM ${CONTROL_SCHEMA}.organizations WHERE slug = $1`, [slug]);
  return r.rows[0] ? toOrg(r.rows[0]) : null;
}

export async function getOrg(db: Database, slug: string): Promise<Org> {
  const org = await findOrg(db, slug);
  if (!org) throw notFound(`no organization "${slug}"`);
  return org;
}

export async function orgById(db: Queryable, id: string): Promise<Org | null> {
  const r = await db.query<OrgRow>(`SELECT id, slug, schema_name, id_prefix FROM ${CONTROL_SCHEMA}.organizations WHERE id = $1`, [id]);
  return r.rows[0] ? toOrg(r.rows[0]) : null;
}

export async function listOrgs(db: Database): Promise<Org[]> {
  return (await db.query<OrgRow>(`SELECT id, slug, schema_name, id_prefix FROM ${CONTROL_SCHEMA}.organizations ORDER BY slug`)).rows.map(
    toOrg,
  );
}
