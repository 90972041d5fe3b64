import { randomBytes, randomUUID } from 'node:crypto';
import { notFound } from '../../engine/errors.js';
import type { Database, Org, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA, ident, isoOrNull as iso } from '../data/sql.js';
import { orgById } from '../data/organizations.js';
import { hashKey } from '../access/tokens.js';

// SCIM tokens: the identity provider's credential for /scim/v2 and nothing else. A token is
// svc_scim_ + 32 random bytes, stored as its SHA-256 (like API keys), shown once; the control
// schema maps the hash to its organization. Neither surface accepts the other's credentials:
// the REST authentication (server/auth.ts) knows only svc_sk_ keys and JWTs, and the SCIM
// surface only these.

export const SCIM_TOKEN_PREFIX = 'svc_scim_';
const TOKEN = /^svc_scim_[A-Za-z0-9_-]{43}$/;

export interface ScimTokenInfo {
  id: string;
  name: string;
  prefix: string;
  created_by: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** Who a SCIM request runs as. */
export interface ScimCaller {
  org: Org;
  tokenId: string;
  tokenName: string;
}

const COLUMNS = 'id, name, prefix, created_by, created_at, last_used_at, revoked_at';
const toInfo = (t: ScimTokenInfo): ScimTokenInfo => ({
  ...t,
  created_at: iso(t.created_at)!,
  last_used_at: iso(t.last_used_at),
  revoked_at: iso(t.revoked_at),
});

export async function createScimToken(
  db: Queryable,
  org: Org,
  name: string,
  createdBy: string,
): Promise<{ token: string; info: ScimTokenInfo }> {
  const token = SCIM_TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const hash = hashKey(token);
  await db.query(`INSERT INTO ${CONTROL_SCHEMA}.scim_token_index (secret_hash, org_id) VALUES ($1, $2)`, [hash, org.id]);
  const r = await db.query<ScimTokenInfo>(
    `INSERT INTO ${ident(org.schema)}.scim_tokens (id, name, secret_hash, prefix, created_by) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
    [randomUUID(), name, hash, token.slice(0, 13), createdBy],
  );
  return { token, info: toInfo(r.rows[0]!) };
}

export async function listScimTokens(db: Queryable, org: Org): Promise<ScimTokenInfo[]> {
  const r = await db.query<ScimTokenInfo>(`SELECT ${COLUMNS} FROM ${ident(org.schema)}.scim_tokens ORDER BY created_at, id`);
  return r.rows.map(toInfo);
}

/** Revokes a token at once: its hash leaves the control schema's index with it. */
export async function revokeScimToken(db: Queryable, org: Org, id: string): Promise<ScimTokenInfo> {
  const r = await db.query<ScimTokenInfo & { secret_hash: string }>(
    `UPDATE ${ident(org.schema)}.scim_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING ${COLUMNS}, secret_hash`,
    [id],
  );
  const row = r.rows[0];
  if (!row) throw notFound(`no SCIM token ${id}`);
  await db.query(`DELETE FROM ${CONTROL_SCHEMA}.scim_token_index WHERE secret_hash = $1`, [row.secret_hash]);
  const { secret_hash: _hash, ...info } = row;
  return toInfo(info);
}

/** The caller of a bearer token that is a live SCIM token, or null for anything else. */
export async function scimCaller(db: Database, token: string): Promise<ScimCaller | null> {
  if (!TOKEN.test(token)) return null;
  const hash = hashKey(token);
  const idx = (await db.query<{ org_id: string }>(`SELECT org_id FROM ${CONTROL_SCHEMA}.scim_token_index WHERE secret_hash = $1`, [hash]))
    .rows[0];
  const org = idx ? await orgById(db, idx.org_id) : null;
  if (!org) return null;
  const row = (
    await db.query<{ id: string; name: string; fresh: boolean }>(
      `SELECT id, name, coalesce(last_used_at > now() - interval '1 minute', false) AS fresh FROM ${ident(org.schema)}.scim_tokens WHERE secret_hash = $1 AND revoked_at IS NULL`,
      [hash],
    )
  ).rows[0];
  if (!row) return null;
  // last_used_at to the minute, as API keys: one write per token per minute.
  if (!row.fresh) await db.query(`UPDATE ${ident(org.schema)}.scim_tokens SET last_used_at = now() WHERE id = $1`, [row.id]);
  return { org, tokenId: row.id, tokenName: row.name };
}
