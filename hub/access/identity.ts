import { randomBytes, randomUUID } from 'node:crypto';
import { conflict, invalid, notFound } from '../../engine/errors.js';
import type { Database, Org, Queryable, Role } from '../contracts.js';
import { CONTROL_SCHEMA, ident, isoOrNull as iso } from '../data/sql.js';
import { orgById } from '../data/organizations.js';
import { hashKey, newApiKey } from './tokens.js';
import { authChanged } from './epoch.js';
import { assertNotLastAdmin, endAccess, lockPeople, type Ended } from './end-access.js';

// Users (people and service accounts), groups, memberships, API keys and invitations of one
// organization. A key acts as the user it belongs to: people mint their own (or redeem an
// invitation for their first), and only service accounts are given keys by an admin.

export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin'];
const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const GROUP_PATH = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9_-]*)*$/;

export type UserKind = 'person' | 'service';

export interface User {
  id: string;
  name: string;
  email: string | null;
  role: Role;
  kind: UserKind;
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

export interface Invitation {
  id: string;
  user_id: string;
  created_by: string;
  created_at: string;
  expires_at: string;
  redeemed_at: string | null;
}

/** Names nobody may have: the audit log's own actor (rows the hub writes by itself). */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(['svc-hub']);

/** Every way a user gets a name (REST, SCIM, sign-in, the CLI) passes here. */
export function checkUserName(name: string): void {
  if (!NAME.test(name))
    throw invalid(`user name "${name}" is invalid: 1 to 64 lowercase letters, digits, ".", "_" or "-", starting with a letter or digit`);
  if (RESERVED_NAMES.has(name)) throw invalid(`user name "${name}" is reserved: the audit log names the hub itself so`);
}

const USER_COLUMNS = 'id, name, email, role, kind, active, created_at';

export async function createUser(
  db: Queryable,
  org: Org,
  input: { name: string; role: Role; email?: string | null; kind?: UserKind },
): Promise<User> {
  checkUserName(input.name);
  if (input.email) await assertEmailFree(db, org, input.email, null);
  const r = await db.query<User>(
    `INSERT INTO ${ident(org.schema)}.users (id, name, email, role, kind) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (name) DO NOTHING RETURNING ${USER_COLUMNS}`,
    [randomUUID(), input.name, input.email ?? null, input.role, input.kind ?? 'person'],
  );
  if (!r.rows[0]) throw conflict(`a user named "${input.name}" exists already`);
  return toUser(r.rows[0]);
}

const toUser = (u: User): User => ({ ...u, created_at: iso(u.created_at)! });

/** One live user per e-mail address in an organization, in any case (the unique index of migration org/018 backs this). */
export async function assertEmailFree(q: Queryable, org: Org, email: string, self: string | null): Promise<void> {
  const r = await q.query<{ name: string }>(
    `SELECT name FROM ${ident(org.schema)}.users WHERE lower(email) = lower($1) AND deleted_at IS NULL AND ($2::text IS NULL OR id <> $2) LIMIT 1`,
    [email, self],
  );
  if (r.rows[0]) throw conflict(`the e-mail address ${email} belongs to another user of this organization already`);
}

/**
 * Whether sign-in may link a provider's account to this user by a verified e-mail address: not
 * when SCIM changed the address after creating the user (SCIM could otherwise point an admin's
 * address at an account its identity provider controls). The SQL twin is LINKABLE_BY_EMAIL_SQL.
 */
export function mayLinkByEmail(user: { email_scim_changed_at: string | Date | null }): boolean {
  return user.email_scim_changed_at === null;
}

/** mayLinkByEmail as a condition on the users table, for sign-in's lookup by address. */
export const LINKABLE_BY_EMAIL_SQL = 'email_scim_changed_at IS NULL';

/**
 * A user name made from outside text (a SCIM userName, an address's local part), free in this
 * organization: lowercased, other characters as "-", a number added when taken.
 */
export async function freeUserName(q: Queryable, org: Org, wanted: string): Promise<string> {
  const base =
    wanted
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 56) || 'user';
  const taken = new Set(
    (
      await q.query<{ name: string }>(`SELECT name FROM ${ident(org.schema)}.users WHERE name = $1 OR name LIKE $2`, [
        base,
        `${base.replace(/[\\%_]/g, '\\$&')}-%`,
      ])
    ).rows.map((r) => r.name),
  );
  if (!taken.has(base) && !RESERVED_NAMES.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

export async function listUsers(db: Queryable, org: Org, page: { after?: string; limit: number }): Promise<User[]> {
  const r = await db.query<User>(
    `SELECT ${USER_COLUMNS} FROM ${ident(org.schema)}.users WHERE ($1::text IS NULL OR name > $1) ORDER BY name LIMIT $2`,
    [page.after ?? null, page.limit],
  );
  return r.rows.map(toUser);
}

/** A user by id or by name (an id wins: ids are never chosen by anyone). */
export async function getUser(db: Queryable, org: Org, idOrName: string): Promise<User | null> {
  const r = await db.query<User>(
    `SELECT ${USER_COLUMNS} FROM ${ident(org.schema)}.users WHERE id::text = $1 OR name = $1 ORDER BY id::text = $1 DESC LIMIT 1`,
    [idOrName],
  );
  return r.rows[0] ? toUser(r.rows[0]) : null;
}

/**
 * Changes a user's role or active state (by id or name). Deactivating ends every access they
 * hold (end-access.ts); neither that nor a demotion may leave the organization without an
 * active admin.
 */
export async function updateUser(db: Database, org: Org, idOrName: string, change: { role?: Role; active?: boolean }): Promise<User> {
  return db.transaction(async (q) => {
    await lockPeople(q, org);
    const user = await getUser(q, org, idOrName);
    // A deleted user is kept for the records that name it, never brought back.
    if (!user || (await isDeleted(q, org, user.id))) throw notFound(`no user ${idOrName}`);
    if (change.role && change.role !== 'admin') await assertNotLastAdmin(q, org, user.id, `make ${change.role}`);
    if (change.active === false && user.active) await endAccess(q, org, user.id, { mode: 'deactivate' });
    const r = await q.query<User>(
      `UPDATE ${ident(org.schema)}.users SET role = coalesce($2, role), active = coalesce($3, active) WHERE id = $1 RETURNING ${USER_COLUMNS}`,
      [user.id, change.role ?? null, change.active ?? null],
    );
    await authChanged(q, org);
    return toUser(r.rows[0]!);
  });
}

/** Deletes a user (by id or name): ends every access they hold; the row stays for the records that name it. */
export async function deleteUser(db: Database, org: Org, idOrName: string): Promise<Ended & { name: string }> {
  return db.transaction(async (q) => {
    await lockPeople(q, org);
    const user = await getUser(q, org, idOrName);
    if (!user || (await isDeleted(q, org, user.id))) throw notFound(`no user ${idOrName}`);
    return { ...(await endAccess(q, org, user.id, { mode: 'delete' })), name: user.name };
  });
}

async function isDeleted(q: Queryable, org: Org, id: string): Promise<boolean> {
  return (await q.query(`SELECT 1 FROM ${ident(org.schema)}.users WHERE id = $1 AND deleted_at IS NOT NULL`, [id])).rows.length > 0;
}

const toGroup = (g: Group): Group => ({ ...g, scope: `group:${g.path}`, members: Number(g.members), created_at: iso(g.created_at)! });

/** Creates a group; a path with "/" hangs under its parent group, created first. */
export async function createGroup(db: Queryable, org: Org, path: string): Promise<Group> {
  if (!GROUP_PATH.test(path))
    throw invalid(`group path "${path}" is invalid: lowercase segments of letters, digits, "_" or "-", separated by "/"`);
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
  // Admins read every group: theirs changed.
  await authChanged(db, org);
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

export async function addMember(
  db: Queryable,
  org: Org,
  groupId: string,
  userId: string,
  readOnly: boolean,
): Promise<{ group: Group; user: User; read_only: boolean }> {
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
    [g.rows[0].id, user.id, readOnly],
  );
  await authChanged(db, org);
  const members = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.memberships WHERE group_id = $1`, [g.rows[0].id]);
  return { group: toGroup({ ...g.rows[0], members: Number(members.rows[0]!.n) }), user, read_only: readOnly };
}

async function groupByIdOrPath(db: Queryable, org: Org, groupId: string): Promise<{ id: string; path: string }> {
  const g = await db.query<{ id: string; path: string }>(
    `SELECT id, path FROM ${ident(org.schema)}.groups WHERE id::text = $1 OR path = $1`,
    [groupId],
  );
  if (!g.rows[0]) throw notFound(`no group ${groupId}`);
  return g.rows[0];
}

export interface Member {
  user_id: string;
  name: string;
  role: Role;
  active: boolean;
  read_only: boolean;
}

/** A group's members (by its id or path), by name. */
export async function listMembers(db: Queryable, org: Org, groupId: string): Promise<Member[]> {
  const s = ident(org.schema);
  const g = await groupByIdOrPath(db, org, groupId);
  const r = await db.query<Member>(
    `SELECT u.id::text AS user_id, u.name, u.role, u.active, m.read_only FROM ${s}.memberships m JOIN ${s}.users u ON u.id = m.user_id
      WHERE m.group_id = $1 ORDER BY u.name`,
    [g.id],
  );
  return r.rows;
}

/** Takes a user (by id or name) out of a group (by its id or path); their scopes change at their next request (the epoch moves). */
export async function removeMember(
  db: Queryable,
  org: Org,
  groupId: string,
  userId: string,
): Promise<{ id: string; path: string; user_id: string }> {
  const g = await groupByIdOrPath(db, org, groupId);
  const user = await getUser(db, org, userId);
  const r = user
    ? await db.query(`DELETE FROM ${ident(org.schema)}.memberships WHERE group_id = $1 AND user_id = $2 RETURNING user_id`, [g.id, user.id])
    : { rows: [] };
  if (r.rows.length === 0) throw notFound(`user ${userId} is not a member of group ${g.path}`);
  await authChanged(db, org);
  return { ...g, user_id: user!.id };
}

/** Issues a key for a user; the key itself is returned once and never stored. */
export async function issueApiKey(db: Database, org: Org, userId: string, name: string): Promise<{ key: string; info: ApiKeyInfo }> {
  const user = await getUser(db, org, userId);
  if (!user) throw invalid(`user_id: no user ${userId} in this organization`);
  return db.transaction((q) => insertApiKey(q, org, user.id, name));
}

/** issueApiKey inside the caller's transaction. */
export async function insertApiKey(q: Queryable, org: Org, userId: string, name: string): Promise<{ key: string; info: ApiKeyInfo }> {
  const key = newApiKey();
  const hash = hashKey(key);
  await q.query(`INSERT INTO ${CONTROL_SCHEMA}.api_key_index (secret_hash, org_id) VALUES ($1, $2)`, [hash, org.id]);
  const r = await q.query<ApiKeyInfo>(
    `INSERT INTO ${ident(org.schema)}.api_keys (id, user_id, name, secret_hash, prefix) VALUES ($1, $2, $3, $4, $5)
     RETURNING id, user_id, name, prefix, created_at, last_used_at, revoked_at`,
    [randomUUID(), userId, name, hash, key.slice(0, 12)],
  );
  return { key, info: toKey(r.rows[0]!) };
}

/** Revokes one hub token (a JWT, by its jti) until it would have expired anyway. */
export async function revokeJwt(db: Queryable, org: Org, jti: string, expiresAt: Date): Promise<void> {
  await db.query(`INSERT INTO ${ident(org.schema)}.revoked_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING`, [
    jti,
    expiresAt.toISOString(),
  ]);
  await db.query(`DELETE FROM ${ident(org.schema)}.revoked_tokens WHERE expires_at < now()`);
  await authChanged(db, org);
}

const toKey = (k: ApiKeyInfo): ApiKeyInfo => ({
  ...k,
  created_at: iso(k.created_at)!,
  last_used_at: iso(k.last_used_at),
  revoked_at: iso(k.revoked_at),
});

/** Keys of the organization, or of one user. */
export async function listApiKeys(
  db: Queryable,
  org: Org,
  page: { after?: string; limit: number; userId?: string },
): Promise<ApiKeyInfo[]> {
  const r = await db.query<ApiKeyInfo>(
    `SELECT id, user_id, name, prefix, created_at, last_used_at, revoked_at FROM ${ident(org.schema)}.api_keys
      WHERE ($1::text IS NULL OR id > $1) AND ($3::text IS NULL OR user_id = $3) ORDER BY id LIMIT $2`,
    [page.after ?? null, page.limit, page.userId ?? null],
  );
  return r.rows.map(toKey);
}

export async function getApiKey(db: Queryable, org: Org, id: string): Promise<ApiKeyInfo | null> {
  const r = await db.query<ApiKeyInfo>(
    `SELECT id, user_id, name, prefix, created_at, last_used_at, revoked_at FROM ${ident(org.schema)}.api_keys WHERE id = $1`,
    [id],
  );
  return r.rows[0] ? toKey(r.rows[0]) : null;
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
    await authChanged(q, org);
    const { secret_hash: _hash, ...info } = row;
    return toKey(info);
  });
}

export const INVITATION_PREFIX = 'svc_inv_';
const MAX_INVITATION_HOURS = 24 * 30;

/**
 * Whether a user has ever held a credential: a key (even revoked), a browser session or an OAuth
 * grant (both login_sessions rows), or a linked sign-in account. An invitation is only for
 * someone who has not: whoever redeems it acts as that person, so for anyone else it would let
 * its creator become them.
 */
export async function hasHadAccess(q: Queryable, org: Org, userId: string): Promise<boolean> {
  const s = ident(org.schema);
  const r = await q.query<{ had: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${s}.api_keys WHERE user_id = $1) OR EXISTS (SELECT 1 FROM ${s}.login_sessions WHERE user_id = $1)
            OR EXISTS (SELECT 1 FROM ${s}.external_identities WHERE user_id = $1) AS had`,
    [userId],
  );
  return r.rows[0]!.had;
}

/** A one-time invitation for a person (by id or name) to redeem for their own first key; the token is returned once. */
export async function createInvitation(
  db: Database,
  org: Org,
  userId: string,
  createdBy: string,
  hours = 72,
): Promise<{ token: string; invitation: Invitation }> {
  const user = await getUser(db, org, userId);
  if (!user || (await isDeleted(db, org, user.id))) throw invalid(`user_id: no user ${userId} in this organization`);
  if (user.kind !== 'person') throw invalid(`user_id: ${user.name} is a service account; an admin issues its keys directly`);
  if (!user.active) throw conflict(`${user.name} is deactivated; reactivate them before inviting them`);
  if (await hasHadAccess(db, org, user.id)) {
    throw conflict(
      `${user.name} has had a key or a sign-in already, and whoever redeems an invitation acts as them: ask ${user.name} to create a key in /me/ (POST /api/v1/me/api-keys)`,
    );
  }
  if (!Number.isInteger(hours) || hours < 1 || hours > MAX_INVITATION_HOURS)
    throw invalid(`expires_in_hours must be 1 to ${MAX_INVITATION_HOURS}`);
  const token = INVITATION_PREFIX + randomBytes(32).toString('base64url');
  const hash = hashKey(token);
  const invitation = await db.transaction(async (q) => {
    await q.query(`INSERT INTO ${CONTROL_SCHEMA}.invitation_index (secret_hash, org_id) VALUES ($1, $2)`, [hash, org.id]);
    const r = await q.query<Invitation>(
      `INSERT INTO ${ident(org.schema)}.invitations (id, user_id, secret_hash, created_by, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5))
       RETURNING id, user_id, created_by, created_at, expires_at, redeemed_at`,
      [randomUUID(), user.id, hash, createdBy, hours],
    );
    return r.rows[0]!;
  });
  return { token, invitation: toInvitation(invitation) };
}

const toInvitation = (i: Invitation): Invitation => ({
  ...i,
  created_at: iso(i.created_at)!,
  expires_at: iso(i.expires_at)!,
  redeemed_at: iso(i.redeemed_at),
});

/**
 * Redeems an invitation for a new key of its user, once: run it in a transaction (q), which
 * spends the invitation with the key's creation. Null when the token is unknown, spent or
 * expired (the caller cannot tell which).
 */
export async function redeemInvitation(
  q: Queryable,
  token: string,
  keyName: string,
): Promise<{ org: Org; user: User; key: string; info: ApiKeyInfo; invitationId: string } | null> {
  if (!token.startsWith(INVITATION_PREFIX) || token.length > 200) return null;
  const hash = hashKey(token);
  const idx = (await q.query<{ org_id: string }>(`SELECT org_id FROM ${CONTROL_SCHEMA}.invitation_index WHERE secret_hash = $1`, [hash]))
    .rows[0];
  const org = idx ? await orgById(q, idx.org_id) : null;
  if (!org) return null;
  const s = ident(org.schema);
  const inv = (
    await q.query<{ id: string; user_id: string }>(
      `UPDATE ${s}.invitations SET redeemed_at = now() WHERE secret_hash = $1 AND redeemed_at IS NULL AND expires_at > now() RETURNING id, user_id`,
      [hash],
    )
  ).rows[0];
  if (!inv) return null;
  await q.query(`DELETE FROM ${CONTROL_SCHEMA}.invitation_index WHERE secret_hash = $1`, [hash]);
  const user = await getUser(q, org, inv.user_id);
  if (!user || !user.active || (await isDeleted(q, org, user.id))) return null;
  // Checked again: the person may have signed in or made a key since the invitation was made.
  if (await hasHadAccess(q, org, user.id)) return null;
  const { key, info } = await insertApiKey(q, org, user.id, keyName);
  return { org, user, key, info, invitationId: inv.id };
}

/** Who an invitation is for, without spending it (the page GET /invite/<token> shows); null when it would not redeem. */
export async function inspectInvitation(q: Queryable, token: string): Promise<{ org: Org; user: User; expiresAt: string } | null> {
  if (!token.startsWith(INVITATION_PREFIX) || token.length > 200) return null;
  const hash = hashKey(token);
  const idx = (await q.query<{ org_id: string }>(`SELECT org_id FROM ${CONTROL_SCHEMA}.invitation_index WHERE secret_hash = $1`, [hash]))
    .rows[0];
  const org = idx ? await orgById(q, idx.org_id) : null;
  if (!org) return null;
  const inv = (
    await q.query<{ user_id: string; expires_at: Date }>(
      `SELECT user_id, expires_at FROM ${ident(org.schema)}.invitations WHERE secret_hash = $1 AND redeemed_at IS NULL AND expires_at > now()`,
      [hash],
    )
  ).rows[0];
  const user = inv ? await getUser(q, org, inv.user_id) : null;
  if (!inv || !user || !user.active || (await isDeleted(q, org, user.id)) || (await hasHadAccess(q, org, user.id))) return null;
  return { org, user, expiresAt: new Date(inv.expires_at).toISOString() };
}
