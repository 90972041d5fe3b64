import type { Org, Queryable } from '../contracts.js';
import { ident, iso } from '../data/sql.js';
import { createGroup } from '../access/identity.js';
import { authChanged } from '../access/epoch.js';
import { scimInvalid, scimNotFound, ScimError } from './scim-errors.js';
import { applyPatch, type PatchOp } from './scim-patch.js';
import { GROUP_SCHEMA, keyOf } from './scim-schema.js';

// SCIM Groups are the organization's hub groups (every one, also those made through REST).
// A group made through SCIM gets a top-level path from its displayName, once: lowercased, every
// run of characters outside [a-z0-9_-] becomes "-", cut to 56 characters, "-2", "-3"… when
// taken ("Sales EMEA" is "sales-emea", scope group:sales-emea). Renaming it later changes its
// displayName only: the path names its scope and the engrams in it. Members are users; a
// membership change moves the organization's authorization epoch, so the members' scopes change
// on their next request.

type Obj = Record<string, unknown>;

interface GroupRow {
  id: string;
  path: string;
  created_at: string;
  scim: Obj | null;
  scim_modified_at: string | null;
}

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

async function members(q: Queryable, org: Org, base: string, groupId?: string): Promise<Map<string, Obj[]>> {
  const s = ident(org.schema);
  const r = await q.query<{ group_id: string; id: string; display: string }>(
    `SELECT m.group_id, u.id, coalesce(u.scim_user_name, u.name) AS display FROM ${s}.memberships m JOIN ${s}.users u ON u.id = m.user_id
      WHERE ($1::text IS NULL OR m.group_id = $1) AND u.deleted_at IS NULL ORDER BY m.created_at, u.id`,
    [groupId ?? null],
  );
  const by = new Map<string, Obj[]>();
  for (const m of r.rows) {
    const list = by.get(m.group_id) ?? [];
    list.push({ value: m.id, display: m.display, $ref: `${base}/Users/${m.id}`, type: 'User' });
    by.set(m.group_id, list);
  }
  return by;
}

function toResource(g: GroupRow, list: Obj[], base: string): Obj {
  const attrs = g.scim ?? {};
  return {
    schemas: [GROUP_SCHEMA],
    id: g.id,
    displayName: typeof attrs.displayName === 'string' ? attrs.displayName : g.path,
    ...(typeof attrs.externalId === 'string' ? { externalId: attrs.externalId } : {}),
    members: list,
    meta: {
      resourceType: 'Group',
      created: iso(g.created_at),
      lastModified: iso(g.scim_modified_at ?? g.created_at),
      location: `${base}/Groups/${g.id}`,
    },
  };
}

const COLUMNS = 'id, path, created_at, scim, scim_modified_at';

export async function listGroups(q: Queryable, org: Org, base: string): Promise<Obj[]> {
  const rows = (await q.query<GroupRow>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.groups ORDER BY created_at, id`)).rows;
  const all = await members(q, org, base);
  return rows.map((g) => toResource(g, all.get(g.id) ?? [], base));
}

async function row(q: Queryable, org: Org, id: string): Promise<GroupRow> {
  const r = await q.query<GroupRow>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.groups WHERE id = $1`, [id]);
  if (!r.rows[0]) throw scimNotFound(`no Group ${id}`);
  return r.rows[0];
}

export async function getGroup(q: Queryable, org: Org, id: string, base: string): Promise<Obj> {
  return toResource(await row(q, org, id), (await members(q, org, base, id)).get(id) ?? [], base);
}

interface CleanGroup {
  displayName: string;
  externalId?: string;
  memberIds: string[];
}

function clean(body: unknown, requireSchemas: boolean): CleanGroup {
  if (!isObj(body)) throw scimInvalid('invalidSyntax', 'the body must be a Group JSON object');
  const get = (name: string) => body[keyOf(body, name) ?? name];
  const schemas = get('schemas');
  if (requireSchemas && (!Array.isArray(schemas) || !schemas.includes(GROUP_SCHEMA)))
    throw scimInvalid('invalidSyntax', `schemas must contain "${GROUP_SCHEMA}"`);
  const displayName = get('displayName');
  if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.length > 256)
    throw scimInvalid('invalidValue', 'displayName is required: a string of 1 to 256 characters');
  const externalId = get('externalId');
  if (externalId !== undefined && externalId !== null && typeof externalId !== 'string')
    throw scimInvalid('invalidValue', 'externalId must be a string');
  const list = get('members') ?? [];
  if (!Array.isArray(list)) throw scimInvalid('invalidValue', 'members must be an array');
  const memberIds = list.map((m, i) => {
    const v = isObj(m) ? m[keyOf(m, 'value') ?? 'value'] : undefined;
    if (typeof v !== 'string' || v === '') throw scimInvalid('invalidValue', `members[${i}].value must be the id of a User`);
    return v;
  });
  return { displayName: displayName.trim(), ...(typeof externalId === 'string' ? { externalId } : {}), memberIds: [...new Set(memberIds)] };
}

/** A free top-level group path for a displayName (rule above). */
async function groupPath(q: Queryable, org: Org, displayName: string): Promise<string> {
  const base =
    displayName
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 56)
      .replace(/-+$/, '') || 'group';
  const taken = new Set(
    (
      await q.query<{ path: string }>(`SELECT path FROM ${ident(org.schema)}.groups WHERE path = $1 OR path LIKE $2`, [
        base,
        `${base.replace(/[\\%_]/g, '\\$&')}-%`,
      ])
    ).rows.map((r) => r.path),
  );
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/** Makes the group's members exactly these users; an id that is no User of the organization is an invalidValue. */
async function setMembers(q: Queryable, org: Org, groupId: string, userIds: string[]): Promise<void> {
  const s = ident(org.schema);
  const known = new Set(
    (
      await q.query<{ id: string }>(`SELECT id FROM ${s}.users WHERE id = ANY($1::text[]) AND kind = 'person' AND deleted_at IS NULL`, [
        userIds,
      ])
    ).rows.map((r) => r.id),
  );
  const unknown = userIds.find((id) => !known.has(id));
  if (unknown) throw scimInvalid('invalidValue', `members: no User ${unknown} (members are Users of this organization)`);
  const removed = await q.query(`DELETE FROM ${s}.memberships WHERE group_id = $1 AND NOT (user_id = ANY($2::text[])) RETURNING user_id`, [
    groupId,
    userIds,
  ]);
  const added = await q.query(
    `INSERT INTO ${s}.memberships (group_id, user_id, read_only) SELECT $1, u, false FROM unnest($2::text[]) AS u ON CONFLICT (group_id, user_id) DO NOTHING RETURNING user_id`,
    [groupId, userIds],
  );
  if (removed.rows.length + added.rows.length > 0) await authChanged(q, org);
}

async function store(q: Queryable, org: Org, id: string, g: CleanGroup): Promise<void> {
  await q.query(`UPDATE ${ident(org.schema)}.groups SET scim = $2::jsonb, scim_modified_at = now() WHERE id = $1`, [
    id,
    JSON.stringify({ displayName: g.displayName, ...(g.externalId ? { externalId: g.externalId } : {}) }),
  ]);
  await setMembers(q, org, id, g.memberIds);
}

export async function createScimGroup(q: Queryable, org: Org, body: unknown, base: string): Promise<Obj> {
  const g = clean(body, true);
  const created = await createGroup(q, org, await groupPath(q, org, g.displayName));
  await store(q, org, created.id, g);
  return getGroup(q, org, created.id, base);
}

export async function replaceScimGroup(q: Queryable, org: Org, id: string, body: unknown, base: string): Promise<Obj> {
  await row(q, org, id);
  if (isObj(body) && keyOf(body, 'id') && body[keyOf(body, 'id')!] !== id) throw scimInvalid('mutability', 'id cannot be changed');
  await store(q, org, id, clean(body, true));
  return getGroup(q, org, id, base);
}

export async function patchScimGroup(q: Queryable, org: Org, id: string, ops: PatchOp[], base: string): Promise<Obj> {
  const patched = applyPatch('Group', await getGroup(q, org, id, base), ops);
  await store(q, org, id, clean(patched, false));
  return getGroup(q, org, id, base);
}

export async function deleteScimGroup(q: Queryable, org: Org, id: string): Promise<void> {
  await row(q, org, id);
  const s = ident(org.schema);
  const children = await q.query(`SELECT path FROM ${s}.groups WHERE parent_id = $1 LIMIT 1`, [id]);
  if (children.rows.length > 0) throw new ScimError(409, 'this group has child groups (made through the REST API); remove them first');
  await q.query(`DELETE FROM ${s}.groups WHERE id = $1`, [id]);
  await authChanged(q, org);
}
