import { randomBytes, randomUUID } from 'node:crypto';
import type { Database, Org, Queryable } from '../contracts.js';
import { ident } from '../data/migrate.js';
import { orgById } from '../data/organizations.js';
import { hashKey, signJwt, type JwtSecrets } from '../access/tokens.js';
import { authChanged } from '../access/epoch.js';

// A signed-in browser holds one HttpOnly cookie: its organization's id and a random secret whose
// SHA-256 names a login_sessions row. The session lives SESSION_HOURS; from it the browser (or
// the admin UI and portal) mints short-lived hub tokens, each carrying the session's id, so that
// signing out, deactivating the user or removing the provider ends them too.

export const SESSION_COOKIE = 'svc_session';
export const SESSION_HOURS = 12;
export const ACCESS_TOKEN_SECONDS = 15 * 60;

export interface LoginSession {
  id: string;
  org: Org;
  userId: string;
  userName: string;
  expiresAt: Date;
}

export async function createSession(q: Queryable, org: Org, userId: string, providerId: string): Promise<{ cookie: string; session: LoginSession }> {
  const secret = randomBytes(32).toString('base64url');
  const id = randomUUID();
  const expiresAt = new Date(Date.now() + SESSION_HOURS * 3600_000);
  await q.query(`INSERT INTO ${ident(org.schema)}.login_sessions (id, user_id, provider_id, secret_hash, expires_at) VALUES ($1, $2, $3, $4, $5)`, [
    id,
    userId,
    providerId,
    hashKey(secret),
    expiresAt,
  ]);
  return { cookie: `${org.id}.${secret}`, session: { id, org, userId, userName: '', expiresAt } };
}

/** The live session a cookie names (its user active), or null. */
export async function sessionFromCookie(db: Queryable, cookie: string | undefined): Promise<LoginSession | null> {
  const m = cookie ? /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/.exec(cookie) : null;
  if (!m) return null;
  const org = await orgById(db, m[1]!);
  if (!org) return null;
  const s = ident(org.schema);
  const row = (
    await db.query<{ id: string; user_id: string; name: string; expires_at: Date }>(
      `SELECT l.id, l.user_id, u.name, l.expires_at FROM ${s}.login_sessions l JOIN ${s}.users u ON u.id = l.user_id
        WHERE l.secret_hash = $1 AND l.revoked_at IS NULL AND l.expires_at > now() AND u.active`,
      [hashKey(m[2]!)],
    )
  ).rows[0];
  return row ? { id: row.id, org, userId: row.user_id, userName: row.name, expiresAt: new Date(row.expires_at) } : null;
}

/** A hub token for the session's user, bound to the session, never outliving it. */
export async function mintToken(db: Queryable, jwt: JwtSecrets, session: LoginSession): Promise<{ token: string; expiresAt: Date }> {
  const user = (await db.query<{ token_version: number }>(`SELECT token_version FROM ${ident(session.org.schema)}.users WHERE id = $1`, [session.userId])).rows[0];
  const ttl = Math.max(1, Math.min(ACCESS_TOKEN_SECONDS, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000)));
  const token = await signJwt(jwt, { sub: session.userId, org: session.org.id, jti: randomUUID(), ver: Number(user?.token_version ?? 0), sid: session.id }, ttl);
  return { token, expiresAt: new Date(Date.now() + ttl * 1000) };
}

/** Signs out: the session and every token minted from it stop working on every hub process. */
export async function endSession(db: Database, session: LoginSession): Promise<void> {
  await db.transaction(async (q) => {
    await q.query(`UPDATE ${ident(session.org.schema)}.login_sessions SET revoked_at = now() WHERE id = $1`, [session.id]);
    await authChanged(q, session.org);
  });
}
