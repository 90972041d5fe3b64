import type { Database, Org, Principal, Role } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/migrate.js';
import { orgById } from '../data/organizations.js';
import { hashKey, looksLikeApiKey, verifyJwt, type JwtSecrets } from '../access/tokens.js';
import { resolveScopes } from '../access/scopes.js';
import { unauthorized } from './problem.js';

// From an Authorization header to the principal a request runs as: an API key (by its hash,
// which the control schema maps to its organization) or a hub JWT (its `org` and `sub` claims).
// Revoked keys, deactivated users and unknown organizations are all simply "invalid".

interface UserRow {
  id: string;
  name: string;
  role: Role;
  active: boolean;
}

export async function authenticate(db: Database, jwt: JwtSecrets, header: string | undefined): Promise<Principal> {
  if (!header) throw unauthorized('missing bearer token: send Authorization: Bearer <API key or token>');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized('the Authorization header must be "Bearer <token>"');
  const token = m[1]!;
  if (looksLikeApiKey(token)) return fromApiKey(db, token);
  const claims = token.split('.').length === 3 ? await verifyJwt(jwt, token) : null;
  if (!claims) throw unauthorized('invalid token: not a known API key, nor a valid unexpired hub token');
  const org = await orgById(db, claims.org);
  if (!org) throw unauthorized('invalid token: its organization no longer exists');
  const user = (await db.query<UserRow>(`SELECT id, name, role, active FROM ${ident(org.schema)}.users WHERE id = $1`, [claims.sub])).rows[0];
  return principal(db, org, user, claims.jti, 'jwt');
}

async function fromApiKey(db: Database, key: string): Promise<Principal> {
  const hash = hashKey(key);
  const idx = (await db.query<{ org_id: string }>(`SELECT org_id FROM ${CONTROL_SCHEMA}.api_key_index WHERE secret_hash = $1`, [hash])).rows[0];
  const org = idx ? await orgById(db, idx.org_id) : null;
  if (!org) throw unauthorized('invalid token: unknown or revoked API key');
  const s = ident(org.schema);
  const row = (
    await db.query<UserRow & { key_id: string; fresh: boolean }>(
      `SELECT k.id AS key_id, u.id, u.name, u.role, u.active,
              coalesce(k.last_used_at > now() - interval '1 minute', false) AS fresh
         FROM ${s}.api_keys k JOIN ${s}.users u ON u.id = k.user_id
        WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`,
      [hash],
    )
  ).rows[0];
  if (!row) throw unauthorized('invalid token: unknown or revoked API key');
  // last_used_at to the minute: one write per key per minute, not one per request.
  if (!row.fresh) await db.query(`UPDATE ${s}.api_keys SET last_used_at = now() WHERE id = $1`, [row.key_id]);
  return principal(db, org, row, row.key_id, 'api_key');
}

async function principal(db: Database, org: Org, user: UserRow | undefined, tokenId: string, via: Principal['via']): Promise<Principal> {
  if (!user || !user.active) throw unauthorized('invalid token: its user is unknown or deactivated');
  const scopes = await resolveScopes(db, org, user);
  return { org, userId: user.id, userName: user.name, role: user.role, tokenId, via, ...scopes };
}
