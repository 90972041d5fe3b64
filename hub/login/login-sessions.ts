import { randomBytes, randomUUID } from 'node:crypto';
import type { Database, Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/sql.js';
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
  expiresAt: Date;
}

/** A browser's session, with who it is (read with it, for pages and audit rows). */
export interface BrowserSession extends LoginSession {
  userName: string;
  role: Role;
}

export interface SessionOptions {
  providerId?: string | null;
  /** An MCP client's OAuth grant: the client's id. */
  clientId?: string;
  hours?: number;
}

/** A new session; its secret (for the cookie, or an OAuth client's refresh token) is `<org id>.<random>`. */
export async function createSession(
  q: Queryable,
  org: Org,
  userId: string,
  opts: SessionOptions = {},
): Promise<{ cookie: string; session: LoginSession }> {
  const secret = randomBytes(32).toString('base64url');
  const id = randomUUID();
  const expiresAt = new Date(Date.now() + (opts.hours ?? SESSION_HOURS) * 3600_000);
  await q.query(
    `INSERT INTO ${ident(org.schema)}.login_sessions (id, user_id, provider_id, client_id, secret_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
    [id, userId, opts.providerId ?? null, opts.clientId ?? null, hashKey(secret), expiresAt],
  );
  return { cookie: `${org.id}.${secret}`, session: { id, org, userId, expiresAt } };
}

const SECRET = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/;

/**
 * An OAuth client's refresh: the grant its refresh token names gets a new secret (the old one is
 * spent, in one statement, so a token used twice works once). Null when unknown, spent or ended.
 */
export async function rotateSession(
  db: Queryable,
  refresh: string,
  clientId: string,
): Promise<{ refresh: string; session: LoginSession } | null> {
  const m = SECRET.exec(refresh);
  const org = m ? await orgById(db, m[1]!) : null;
  if (!m || !org) return null;
  const s = ident(org.schema);
  const secret = randomBytes(32).toString('base64url');
  const row = (
    await db.query<{ id: string; user_id: string; expires_at: Date }>(
      `UPDATE ${s}.login_sessions l SET secret_hash = $2 FROM ${s}.users u
        WHERE l.secret_hash = $1 AND l.client_id = $3 AND u.id = l.user_id AND u.active AND l.revoked_at IS NULL AND l.expires_at > now()
        RETURNING l.id, l.user_id, l.expires_at`,
      [hashKey(m[2]!), hashKey(secret), clientId],
    )
  ).rows[0];
  return row
    ? { refresh: `${org.id}.${secret}`, session: { id: row.id, org, userId: row.user_id, expiresAt: new Date(row.expires_at) } }
    : null;
}

/** The live session a cookie names (its user active), or null. */
export async function sessionFromCookie(db: Queryable, cookie: string | undefined): Promise<BrowserSession | null> {
  const m = cookie ? SECRET.exec(cookie) : null;
  if (!m) return null;
  const org = await orgById(db, m[1]!);
  if (!org) return null;
  const s = ident(org.schema);
  const row = (
    await db.query<{ id: string; user_id: string; name: string; role: Role; expires_at: Date }>(
      `SELECT l.id, l.user_id, u.name, u.role, l.expires_at FROM ${s}.login_sessions l JOIN ${s}.users u ON u.id = l.user_id
        WHERE l.secret_hash = $1 AND l.client_id IS NULL AND l.revoked_at IS NULL AND l.expires_at > now() AND u.active`,
      [hashKey(m[2]!)],
    )
  ).rows[0];
  return row ? { id: row.id, org, userId: row.user_id, userName: row.name, role: row.role, expiresAt: new Date(row.expires_at) } : null;
}

/** A hub token for the session's user, bound to the session, never outliving it. */
export async function mintToken(
  db: Queryable,
  jwt: JwtSecrets,
  session: LoginSession,
  opts: { seconds?: number; audience?: string } = {},
): Promise<{ token: string; expiresAt: Date }> {
  const user = (
    await db.query<{ token_version: number }>(`SELECT token_version FROM ${ident(session.org.schema)}.users WHERE id = $1`, [
      session.userId,
    ])
  ).rows[0];
  const ttl = Math.max(1, Math.min(opts.seconds ?? ACCESS_TOKEN_SECONDS, Math.floor((session.expiresAt.getTime() - Date.now()) / 1000)));
  const claims = {
    sub: session.userId,
    org: session.org.id,
    jti: randomUUID(),
    ver: Number(user?.token_version ?? 0),
    sid: session.id,
    ...(opts.audience ? { aud: opts.audience } : {}),
  };
  const token = await signJwt(jwt, claims, ttl);
  return { token, expiresAt: new Date(Date.now() + ttl * 1000) };
}

/** Signs out: the session and every token minted from it stop working on every hub process. */
export async function endSession(db: Database, session: LoginSession): Promise<void> {
  await db.transaction(async (q) => {
    await q.query(`UPDATE ${ident(session.org.schema)}.login_sessions SET revoked_at = now() WHERE id = $1`, [session.id]);
    await authChanged(q, session.org);
  });
}
