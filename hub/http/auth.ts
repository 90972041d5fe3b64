import type { Database, Org, Principal, Role } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { orgById } from '../data/organizations.js';
import { hashKey, looksLikeApiKey, verifyJwt, type JwtSecrets } from '../access/tokens.js';
import { resolveScopes } from '../access/scopes.js';
import { authEpoch } from '../access/epoch.js';
import { unauthorized } from './problem.js';

// From an Authorization header to the principal a request runs as: an API key (by its hash,
// which the control schema maps to its organization) or a hub JWT (its `org` and `sub` claims).
// Revoked keys, deactivated users and unknown organizations are all simply "invalid".

interface UserRow {
  id: string;
  name: string;
  role: Role;
  active: boolean;
  token_version: number;
}

export async function authenticate(db: Database, jwt: JwtSecrets, header: string | undefined): Promise<Principal> {
  if (!header) throw unauthorized('missing bearer token: send Authorization: Bearer <API key or token>');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized('the Authorization header must be "Bearer <token>"', 'invalid_request');
  const token = m[1]!;
  if (looksLikeApiKey(token)) return fromApiKey(db, token);
  const claims = token.split('.').length === 3 ? await verifyJwt(jwt, token) : null;
  if (!claims) throw unauthorized('invalid token: not a known API key, nor a valid unexpired hub token', 'invalid_token');
  const org = await orgById(db, claims.org);
  if (!org) throw unauthorized('invalid token: its organization no longer exists', 'invalid_token');
  const epoch = await authEpoch(db, org);
  const s = ident(org.schema);
  const user = (
    await db.query<UserRow & { revoked: boolean; is_grant: boolean }>(
      `SELECT id, name, role, active, token_version,
              EXISTS (SELECT 1 FROM ${s}.revoked_tokens WHERE jti = $2)
              OR ($3::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${s}.login_sessions WHERE id = $3 AND user_id = $1 AND revoked_at IS NULL AND expires_at > now())) AS revoked,
              EXISTS (SELECT 1 FROM ${s}.login_sessions WHERE id = $3 AND client_id IS NOT NULL) AS is_grant
         FROM ${s}.users WHERE id = $1`,
      [claims.sub, claims.jti, claims.sid ?? null],
    )
  ).rows[0];
  if (user && (user.revoked || Number(user.token_version) !== claims.ver))
    throw unauthorized('invalid token: it was revoked', 'invalid_token');
  const p = await principal(db, org, epoch, user, claims.jti, 'jwt', claims.exp);
  return { ...p, ...(claims.aud ? { audience: claims.aud } : {}), ...(user?.is_grant && claims.sid ? { grant: claims.sid } : {}) };
}

/** Where a request goes, for the audience check: its method and path. */
export interface Target {
  method: string;
  path: string;
}

/** The paths of the MCP resource: an access token the OAuth server issued for /mcp or /sse works there. */
const MCP_RESOURCE_PATHS = new Set(['/mcp', '/sse', '/messages']);

/**
 * RFC 8707: a token issued for a resource is refused everywhere else. The OAuth server issues for
 * the MCP endpoints only, so such a token reaches MCP (and DELETE /api/v1/me/token, which ends
 * its grant), never REST, the admin routes or the pages. API keys and browser tokens have no
 * audience and go where they always went. Called by every surface (Gatekeeper.principal), on
 * cached principals too.
 */
export function checkAudience(p: Principal, target: Target | undefined): void {
  if (p.audience === undefined) return;
  let resource = '';
  try {
    resource = new URL(p.audience).pathname;
  } catch {
    // An audience that is not a URL is no resource of this hub.
  }
  const path = target?.path.replace(/\/+$/, '') ?? '';
  if (MCP_RESOURCE_PATHS.has(path) && (resource === '/mcp' || resource === '/sse')) return;
  if (target?.method === 'DELETE' && path === '/api/v1/me/token') return;
  throw unauthorized(
    `invalid token: it was issued for ${p.audience} (an MCP client's access) and is not valid here; use an API key or sign in`,
    'invalid_token',
  );
}

async function fromApiKey(db: Database, key: string): Promise<Principal> {
  const hash = hashKey(key);
  const idx = (await db.query<{ org_id: string }>(`SELECT org_id FROM ${CONTROL_SCHEMA}.api_key_index WHERE secret_hash = $1`, [hash]))
    .rows[0];
  const org = idx ? await orgById(db, idx.org_id) : null;
  if (!org) throw unauthorized('invalid token: unknown or revoked API key', 'invalid_token');
  // Read before the key and the user: a change committed after this read bumps the epoch, and
  // the next request resolves the caller again.
  const epoch = await authEpoch(db, org);
  const s = ident(org.schema);
  const row = (
    await db.query<UserRow & { key_id: string; fresh: boolean }>(
      `SELECT k.id AS key_id, u.id, u.name, u.role, u.active, u.token_version,
              coalesce(k.last_used_at > now() - interval '1 minute', false) AS fresh
         FROM ${s}.api_keys k JOIN ${s}.users u ON u.id = k.user_id
        WHERE k.secret_hash = $1 AND k.revoked_at IS NULL`,
      [hash],
    )
  ).rows[0];
  if (!row) throw unauthorized('invalid token: unknown or revoked API key', 'invalid_token');
  // last_used_at to the minute: one write per key per minute, not one per request.
  if (!row.fresh) await db.query(`UPDATE ${s}.api_keys SET last_used_at = now() WHERE id = $1`, [row.key_id]);
  return principal(db, org, epoch, row, row.key_id, 'api_key');
}

async function principal(
  db: Database,
  org: Org,
  epoch: number,
  user: UserRow | undefined,
  tokenId: string,
  via: Principal['via'],
  expires?: number,
): Promise<Principal> {
  if (!user || !user.active) throw unauthorized('invalid token: its user is unknown or deactivated', 'invalid_token');
  const scopes = await resolveScopes(db, org, user);
  return {
    org,
    userId: user.id,
    userName: user.name,
    role: user.role,
    tokenId,
    via,
    epoch,
    ...(expires ? { expiresAt: expires } : {}),
    ...scopes,
  };
}
