import { randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../../engine/errors.js';
import type { Database, Org, Queryable, Role } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/migrate.js';
import { hashKey, newApiKey } from './tokens.js';

// Users, groups, memberships and API keys of one organization.

export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin'];
const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const GROUP_PATH = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)*$/;

export interface User {
  id: string;
  name: string;
  email: string | null;
  role: Role;
  active: boolean;
  created_at: string;
}

export interface Group {
  id: string;
  path: string;
  parent_id: string | null;
  scope: string;
  members: number;
  created_at: string;
}

export interface ApiKeyInfo {
  id: string;
  user_id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

export function checkUserName(name: string): void {
  if (!NAME.test(name)) throw invalid(`user name "${name}" is invalid: 1 to 64 lowercase letters, digits, ".", "_" or "-", starting with a letter or digit`);
}

export async function createUser(db: Queryable, org: Org, input: { name: string; role: Role; email?: string | null }): Promise<User> {
  checkUserName(input.name);
  const r = await db.query<User>(
    `INSERT INTO ${ident(org.schema)}.users (id, name, email, role) VALUES ($1, $2, $3, $4)
     ON CONFLICT (name) DO NOTHING RETURNING id, name, email, role, active, created_at`,
    [randomUUID(), input.name, input.email ?? null, input.role],
  );
  if (!r.rows[0]) throw conflict(`a user named "${input.name}" exists already`);
  return toUser(r.rows[0]);
}

const toUser = (u: User): User => ({ ...u, created_at: iso(u.created_at)! });

export async function listUsers(db: Queryable, org: Org, page: { after?: string; limit: number }): Promise<User[]> {
  const r = await db.query<User>(
    `SELECT id, name, email, role, active, created_at FROM ${ident(org.schema)}.users WHERE ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2`,
    [page.after ?? null, page.limit],
  );
  return r.rows.map(toUser);
}

export async function getUser(db: Queryable, org: Org, id: string): Promise<User | null> {
  const r = await db.query<User>(`SELECT id, name, email, role, active, created_at FROM ${ident(org.schema)}.users WHERE id = $1`, [id]);
  return r.rows[0] ? toUser(r.rows[0]) : null;
}

const toGroup = (g: Group): Group => ({ ...g, scope: `group:${g.path}`, members: Number(g.members), created_at: iso(g.created_at)! });

/** Creates a group; a path with "/" hangs under its parent group, created first. */
export async function createGroup(db: Queryable, org: Org, path: string): Promise<Group> {
  if (!GROUP_PATH.test(path)) throw invalid(`group path "${path}" is invalid: lowercase segments of letters, digits, "_" or "-", separated by "/"`);
  const s = ident(org.schema);
  const parentPath = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : null;
  let parentId: string | null = null;
  if (parentPath) {
    const parent = await db.query<{ id: string }>(`SELECT id FROM ${s}.groups WHERE path = $1`, [parentPath]);
    if (!parent.rows[0]) throw invalid(`group "${path}" needs its parent group "${parentPath}" first`);
    parentId = parent.rows[0].id;
  }
  const r = await db.query<Group>(
    `INSERT INTO ${s}.groups (id, path, parent_id) VALUES ($1, $2, $3) ON CONFLICT (path) DO NOTHING
     RETURNING id, path, parent_id, created_at, 0 AS members`,
    [randomUUID(), path, parentId],
  );
  if (!r.rows[0]) throw conflict(`group "${path}" exists already`);
  return toGroup(r.rows[0]);
}

export async function listGroups(db: Queryable, org: Org, page: { after?: string; limit: number }): Promise<Group[]> {
  const s = ident(org.schema);
  const r = await db.query<Group>(
    `SELECT g.id, g.path, g.parent_id, g.created_at, (SELECT count(*)::int FROM ${s}.memberships m WHERE m.group_id = g.id) AS members
       FROM ${s}.groups g WHERE ($1::text IS NULL OR g.path > $1) ORDER BY g.path LIMIT $2`,
    [page.after ?? null, page.limit],
  );
  return r.rows.map(toGroup);
}

export async function addMember(db: Queryable, org: Org, groupId: string, userId: string, readOnly: boolean): Promise<{ group: Group; user: User; read_only: boolean }> {
  const s = ident(org.schema);
  const g = await db.query<Group>(
    `SELECT id, path, parent_id, created_at, 0 AS members FROM ${s}.groups WHERE id::text = $1 OR path = $1`,
    [groupId],
  );
  if (!g.rows[0]) throw notFound(`no group ${groupId}`);
  const user = await getUser(db, org, userId);
  if (!user) throw invalid(`user_id: no user ${userId} in this organization`);
  await db.query(
    `INSERT INTO ${s}.memberships (group_id, user_id, read_only) VALUES ($1, $2, $3)
     ON CONFLICT (group_id, user_id) DO UPDATE SET read_only = excluded.read_only`,
    [g.rows[0].id, userId, readOnly],
  );
  const members = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.memberships WHERE group_id = $1`, [g.rows[0].id]);
  return { group: toGroup({ ...g.rows[0], members: Number(members.rows[0]!.n) }), user, read_only: readOnly };
}

/** Issues a key for a user; the key itself is returned once and never stored. */
export async function issueApiKey(db: Database, org: Org, userId: string, name: string): Promise<{ key: string; info: ApiKeyInfo }> {
  if (!(await getUser(db, org, userId))) throw invalid(`user_id: no user ${userId} in this organization`);
  const key = newApiKey();
  const hash = hashKey(key);
  const id = randomUUID();
  const info = await db.transaction(async (q) => {
    await q.query(`INSERT INTO ${CONTROL_SCHEMA}.api_key_index (secret_hash, org_id) VALUES ($1, $2)`, [hash, org.id]);
    const r = await q.query<ApiKeyInfo>(
      `INSERT INTO ${ident(org.schema)}.api_keys (id, user_id, name, secret_hash, prefix) VALUES ($1, $2, $3, $4, $5)
       RETURNING id, user_id, name, prefix, created_at, last_used_at, revoked_at`,
      [id, userId, name, hash, key.slice(0, 12)],
    );
    return r.rows[0]!;
  });
  return { key, info: toKey(info) };
}

const toKey = (k: ApiKeyInfo): ApiKeyInfo => ({ ...k, created_at: iso(k.created_at)!, last_used_at: iso(k.last_used_at), revoked_at: iso(k.revoked_at) });

export async function listApiKeys(db: Queryable, org: Org, page: { after?: string; limit: number }): Promise<ApiKeyInfo[]> {
  const r = await db.query<ApiKeyInfo>(
    `SELECT id, user_id, name, prefix, created_at, last_used_at, revoked_at FROM ${ident(org.schema)}.api_keys
      WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2`,
    [page.after ?? null, page.limit],
  );
  return r.rows.map(toKey);
}

export async function revokeApiKey(db: Database, org: Org, id: string): Promise<ApiKeyInfo> {
  return db.transaction(async (q) => {
    const r = await q.query<ApiKeyInfo & { secret_hash: string }>(
      `UPDATE ${ident(org.schema)}.api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id::text = $1
       RETURNING id, user_id, name, prefix, created_at, last_used_at, revoked_at, secret_hash`,
      [id],
    );
    const row = r.rows[0];
    if (!row) throw notFound(`no API key ${id}`);
    await q.query(`DELETE FROM ${CONTROL_SCHEMA}.api_key_index WHERE secret_hash = $1`, [row.secret_hash]);
    const { secret_hash: _hash, ...info } = row;
    return toKey(info);
  });
}
