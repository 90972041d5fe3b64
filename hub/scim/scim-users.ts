import { SvcError } from '../../engine/errors.js';
import type { Org, Queryable } from '../contracts.js';
import { ident, iso } from '../data/sql.js';
import { assertEmailFree, createUser, freeUserName } from '../access/identity.js';
import { authChanged } from '../access/epoch.js';
import { endAccess, lockPeople, type Ended, type EndMode } from '../access/end-access.js';
import { scimInvalid, scimNotFound, ScimError } from './scim-errors.js';
import { applyPatch, type PatchOp } from './scim-patch.js';
import { attributeDef, canonicalName, ENTERPRISE_SCHEMA, extensionOf, keyOf, USER_SCHEMA } from './scim-schema.js';

// SCIM Users are the organization's people (hub users of kind "person"; service accounts are
// not the identity provider's). What the provider sends is kept as it sent it (users.scim), and
// the hub's columns follow from it: users.email from the primary (else the work, else the first)
// address, users.active from active. New users are viewers.
//
// The hub name is derived once, at creation, and never follows a later userName change: it names
// the user's scope (user:<name>) and their audit rows. Rule: userName lowercased, every run of
// characters outside [a-z0-9._-] (the "@" included) becomes "-", leading non-alphanumerics are
// dropped, cut to 56 characters; "-2", "-3"… is appended when taken ("Alice@Contoso.com" is
// "alice-contoso.com"). People made otherwise (REST, sign-in, the first admin) are listed too,
// their userName their name, but SCIM changes only the people it provisioned (users.provisioned_by
// 'scim'): anything else is a 403, so an identity provider's token cannot rename, re-address,
// deactivate or delete an admin the hub made. An e-mail address belongs to one user of the
// organization (any case); when SCIM changes a user's address, sign-in no longer links an
// account to them by address (identity.ts mayLinkByEmail).
//
// Deactivating (active false) or deleting a user ends every access at once (access/end-access.ts,
// the same code REST uses), and neither may remove the organization's last active admin (409).
// Deleting keeps the row (audit rows and engrams name it) but hides it from SCIM, frees its
// userName and drops its memberships, email and sign-in links.
//
// Work per request is bounded: each multi-valued attribute holds at most MAX_VALUES values, and
// a User's attributes at most MAX_USER_BYTES as JSON.

type Obj = Record<string, unknown>;

interface UserRow {
  id: string;
  name: string;
  email: string | null;
  active: boolean;
  provisioned_by: string | null;
  created_at: string;
  scim: Obj | null;
  scim_user_name: string | null;
  scim_modified_at: string | null;
}

const COLUMNS = 'id, name, email, active, provisioned_by, created_at, scim, scim_user_name, scim_modified_at';
/** The most values one multi-valued attribute (emails, phoneNumbers, addresses…) of a User may hold. */
export const MAX_VALUES = 10;
/** The most a User's kept attributes may weigh as JSON. */
export const MAX_USER_BYTES = 64 * 1024;
/** Attributes the server computes or never keeps: not stored from a client. */
const NOT_STORED = new Set(['id', 'meta', 'schemas', 'groups', 'active', 'password']);
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function toResource(u: UserRow, groups: Obj[], base: string): Obj {
  const attrs: Obj = u.scim ?? (u.email ? { emails: [{ value: u.email, primary: true }] } : {});
  return {
    schemas: isObj(attrs[ENTERPRISE_SCHEMA]) ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: u.id,
    userName: u.scim_user_name ?? u.name,
    ...Object.fromEntries(Object.entries(attrs).filter(([k]) => k !== 'userName')),
    active: u.active,
    groups,
    meta: {
      resourceType: 'User',
      created: iso(u.created_at),
      lastModified: iso(u.scim_modified_at ?? u.created_at),
      location: `${base}/Users/${u.id}`,
    },
  };
}

async function groupsOf(q: Queryable, org: Org, base: string, userId?: string): Promise<Map<string, Obj[]>> {
  const s = ident(org.schema);
  const r = await q.query<{ user_id: string; id: string; display: string }>(
    `SELECT m.user_id, g.id, coalesce(g.scim->>'displayName', g.path) AS display FROM ${s}.memberships m JOIN ${s}.groups g ON g.id = m.group_id
      WHERE ($1::text IS NULL OR m.user_id = $1) ORDER BY g.path`,
    [userId ?? null],
  );
  const by = new Map<string, Obj[]>();
  for (const g of r.rows) {
    const list = by.get(g.user_id) ?? [];
    list.push({ value: g.id, display: g.display, $ref: `${base}/Groups/${g.id}`, type: 'direct' });
    by.set(g.user_id, list);
  }
  return by;
}

/** Every SCIM user of the organization, oldest first (filters are evaluated over these in memory). */
export async function listUsers(q: Queryable, org: Org, base: string): Promise<Obj[]> {
  const rows = (
    await q.query<UserRow>(
      `SELECT ${COLUMNS} FROM ${ident(org.schema)}.users WHERE kind = 'person' AND deleted_at IS NULL ORDER BY created_at, id`,
    )
  ).rows;
  const groups = await groupsOf(q, org, base);
  return rows.map((u) => toResource(u, groups.get(u.id) ?? [], base));
}

async function row(q: Queryable, org: Org, id: string): Promise<UserRow> {
  const r = await q.query<UserRow>(
    `SELECT ${COLUMNS} FROM ${ident(org.schema)}.users WHERE id = $1 AND kind = 'person' AND deleted_at IS NULL`,
    [id],
  );
  if (!r.rows[0]) throw scimNotFound(`no User ${id}`);
  return r.rows[0];
}

export async function getUser(q: Queryable, org: Org, id: string, base: string): Promise<Obj> {
  const u = await row(q, org, id);
  return toResource(u, (await groupsOf(q, org, base, id)).get(id) ?? [], base);
}

const asBoolean = (v: unknown, what: string): boolean => {
  if (typeof v === 'boolean') return v;
  // Entra sends "True" and "False".
  if (typeof v === 'string' && /^(true|false)$/i.test(v)) return v.toLowerCase() === 'true';
  throw scimInvalid('invalidValue', `${what} must be a boolean (got ${JSON.stringify(v)})`);
};

interface CleanUser {
  userName: string;
  active: boolean | undefined;
  attrs: Obj;
  email: string | null;
}

/** A User body checked and normalized: names in the schema's case, booleans as booleans. */
function clean(body: unknown, requireSchemas: boolean): CleanUser {
  if (!isObj(body)) throw scimInvalid('invalidSyntax', 'the body must be a User JSON object');
  const schemasKey = keyOf(body, 'schemas');
  if (requireSchemas && (!schemasKey || !Array.isArray(body[schemasKey]) || !(body[schemasKey] as unknown[]).includes(USER_SCHEMA))) {
    throw scimInvalid('invalidSyntax', `schemas must contain "${USER_SCHEMA}"`);
  }
  // No prototype: a "__proto__" key in the body stays a plain (stored, harmless) key.
  const attrs: Obj = Object.create(null) as Obj;
  let active: boolean | undefined;
  for (const [rawKey, value] of Object.entries(body)) {
    const ext = extensionOf('User', rawKey);
    if (ext) {
      if (!isObj(value)) throw scimInvalid('invalidValue', `${ext} must be an object`);
      attrs[ext] = Object.fromEntries(Object.entries(value).map(([k, v]) => [canonicalName('User', ext, k), v]));
      continue;
    }
    const key = canonicalName('User', undefined, rawKey);
    if (key === 'active') active = value === null ? undefined : asBoolean(value, 'active');
    else if (!NOT_STORED.has(key) && value !== null) attrs[key] = checked(key, value);
  }
  const userName = attrs.userName;
  if (typeof userName !== 'string' || userName.trim() === '' || userName.length > 256)
    throw scimInvalid('invalidValue', 'userName is required: a string of 1 to 256 characters');
  if (attrs.externalId !== undefined && typeof attrs.externalId !== 'string')
    throw scimInvalid('invalidValue', 'externalId must be a string');
  attrs.userName = userName.trim();
  // What is kept of a User is read back by every list: a fixed size, whatever the body limit.
  const size = Buffer.byteLength(JSON.stringify(attrs));
  if (size > MAX_USER_BYTES)
    throw scimInvalid('invalidValue', `this User is ${size} bytes as JSON; a User may be at most ${MAX_USER_BYTES} bytes`);
  return { userName: userName.trim(), active, attrs, email: primaryEmail(attrs.emails) };
}

function checked(key: string, value: unknown): unknown {
  const def = attributeDef('User', undefined, key);
  if (!def) return value;
  if (def.multiValued) {
    if (!Array.isArray(value) || !value.every(isObj)) throw scimInvalid('invalidValue', `${key} must be an array of objects`);
    if (value.length > MAX_VALUES)
      throw scimInvalid('invalidValue', `${key} holds ${value.length} values; a User may have at most ${MAX_VALUES}`);
    return value.map((item) => {
      const out = Object.fromEntries(Object.entries(item).map(([k, v]) => [canonicalName('User', undefined, key, k), v]));
      if (out.primary !== undefined) out.primary = asBoolean(out.primary, `${key}.primary`);
      return out;
    });
  }
  if (def.type === 'complex' && !isObj(value)) throw scimInvalid('invalidValue', `${key} must be an object`);
  if (def.type === 'string' && typeof value !== 'string') throw scimInvalid('invalidValue', `${key} must be a string`);
  return value;
}

function primaryEmail(emails: unknown): string | null {
  if (!Array.isArray(emails)) return null;
  const list = emails.filter((e): e is Obj => isObj(e) && typeof e.value === 'string' && e.value !== '');
  const pick = list.find((e) => e.primary === true) ?? list.find((e) => String(e.type).toLowerCase() === 'work') ?? list[0];
  return pick ? (pick.value as string) : null;
}

async function assertFree(q: Queryable, org: Org, userName: string, self: string | null): Promise<void> {
  const r = await q.query(
    `SELECT 1 FROM ${ident(org.schema)}.users WHERE kind = 'person' AND deleted_at IS NULL AND ($2::text IS NULL OR id <> $2)
        AND (lower(scim_user_name) = lower($1) OR (scim_user_name IS NULL AND name = lower($1))) LIMIT 1`,
    [userName, self],
  );
  if (r.rows.length > 0) throw new ScimError(409, `a User with userName "${userName}" exists already`, 'uniqueness');
}

export async function createScimUser(q: Queryable, org: Org, body: unknown, base: string): Promise<Obj> {
  const u = clean(body, true);
  await assertFree(q, org, u.userName, null);
  const created = await createUser(q, org, {
    name: await freeUserName(q, org, u.userName),
    role: 'viewer',
    email: u.email,
    kind: 'person',
  });
  await q.query(
    `UPDATE ${ident(org.schema)}.users SET scim = $2::jsonb, scim_user_name = $3, active = $4, scim_modified_at = now(), provisioned_by = 'scim' WHERE id = $1`,
    [created.id, JSON.stringify(u.attrs), u.userName, u.active ?? true],
  );
  await authChanged(q, org);
  return getUser(q, org, created.id, base);
}

/** A user SCIM may change: one it provisioned (403 for anyone else). */
async function managed(q: Queryable, org: Org, id: string): Promise<UserRow> {
  const u = await row(q, org, id);
  if (u.provisioned_by !== 'scim') {
    throw new ScimError(403, `User ${id} (${u.name}) was not provisioned through SCIM: the hub manages them, and SCIM may only read them`);
  }
  return u;
}

/** Ends the user's access (end-access.ts); the last active admin is a 409 in SCIM's shape. */
async function end(q: Queryable, org: Org, id: string, mode: EndMode): Promise<Ended> {
  try {
    return await endAccess(q, org, id, { mode });
  } catch (err) {
    if (err instanceof SvcError && err.kind === 'conflict') throw new ScimError(409, err.message);
    throw err;
  }
}

async function store(q: Queryable, org: Org, id: string, u: CleanUser, base: string): Promise<Obj> {
  // Before the row is written: this write may end the user's access (end-access.ts lockPeople).
  await lockPeople(q, org);
  const before = await managed(q, org, id);
  await assertFree(q, org, u.userName, id);
  const readdressed = (u.email ?? '').toLowerCase() !== (before.email ?? '').toLowerCase();
  if (readdressed && u.email) await assertEmailFree(q, org, u.email, id);
  await q.query(
    `UPDATE ${ident(org.schema)}.users SET scim = $2::jsonb, scim_user_name = $3, email = $4, scim_modified_at = now(),
            email_scim_changed_at = CASE WHEN $5 THEN now() ELSE email_scim_changed_at END WHERE id = $1`,
    [id, JSON.stringify(u.attrs), u.userName, u.email, readdressed],
  );
  if (u.active === false && before.active) await end(q, org, id, 'deactivate');
  else if (u.active === true && !before.active) {
    await q.query(`UPDATE ${ident(org.schema)}.users SET active = true WHERE id = $1`, [id]);
    await authChanged(q, org);
  }
  return getUser(q, org, id, base);
}

/** PUT: the body replaces every attribute the client may write; active, when absent, stays. */
export async function replaceScimUser(q: Queryable, org: Org, id: string, body: unknown, base: string): Promise<Obj> {
  if (isObj(body) && keyOf(body, 'id') && body[keyOf(body, 'id')!] !== id) throw scimInvalid('mutability', 'id cannot be changed');
  return store(q, org, id, clean(body, true), base);
}

export async function patchScimUser(q: Queryable, org: Org, id: string, ops: PatchOp[], base: string): Promise<Obj> {
  await managed(q, org, id);
  const patched = applyPatch('User', await getUser(q, org, id, base), ops);
  return store(q, org, id, clean(patched, false), base);
}

/** Deletes a provisioned user: access ended, own data erased; answers what ended (for the audit row). */
export async function deleteScimUser(q: Queryable, org: Org, id: string): Promise<Record<string, unknown>> {
  await managed(q, org, id);
  // Its email and sign-in links go too: a person provisioned again later signs in as the new user.
  const { user_id: _id, ...ended } = await end(q, org, id, 'delete');
  return ended;
}
