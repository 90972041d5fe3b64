import { randomBytes, randomUUID } from 'node:crypto';
import { conflict, invalid } from '../../engine/errors.js';
import type { Org, Queryable, Role } from '../contracts.js';
import { ident } from '../data/sql.js';
import { orgById } from '../data/organizations.js';
import { hashKey } from '../access/tokens.js';
import { getUser, type User } from '../access/identity.js';
import { createSession, type LoginSession } from './login-sessions.js';

// Single-use sign-in links: how the first admin gets into /admin/ before any identity provider
// exists (svc hub org create, svc hub login-link), and how an admin sends someone a way in.
// A link is `<hub>/sign-in/link/<org id>.<secret>`; only the secret's SHA-256 is kept. It works
// LINK_MINUTES, once, for one browser session of the person it names. Opening it shows a page
// with one button; the POST of that button spends it (mail scanners fetch links, they do not
// press buttons). No password is stored anywhere: the hub still federates identity.

export const LINK_MINUTES = 10;
const TOKEN = /^([0-9a-f-]{36})\.([A-Za-z0-9_-]{43})$/;

export interface LoginLink {
  id: string;
  token: string;
  user: User;
  expiresAt: string;
}

/** The link's path on the hub (the caller puts the origin in front). */
export const linkPath = (token: string): string => `/sign-in/link/${token}`;

/** A new link for a person (by id or name) of the organization; the token is returned once. */
export async function createLoginLink(q: Queryable, org: Org, idOrName: string, createdBy: string): Promise<LoginLink> {
  const s = ident(org.schema);
  const user = await getUser(q, org, idOrName);
  const deleted = user
    ? (await q.query(`SELECT 1 FROM ${s}.users WHERE id = $1 AND deleted_at IS NOT NULL`, [user.id])).rows.length > 0
    : false;
  if (!user || deleted) throw invalid(`user: no user ${idOrName} in ${org.slug}`);
  if (user.kind !== 'person') throw invalid(`user: ${user.name} is a service account; it signs in with its API key, not in a browser`);
  if (!user.active) throw conflict(`${user.name} is deactivated; reactivate them first`);
  // Expired and used links are swept as new ones are made.
  await q.query(`DELETE FROM ${s}.login_links WHERE expires_at < now() - interval '30 days'`);
  const secret = randomBytes(32).toString('base64url');
  const id = randomUUID();
  const expires = (
    await q.query<{ expires_at: Date }>(
      `INSERT INTO ${s}.login_links (id, user_id, secret_hash, created_by, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(mins => $5)) RETURNING expires_at`,
      [id, user.id, hashKey(secret), createdBy, LINK_MINUTES],
    )
  ).rows[0]!.expires_at;
  return { id, token: `${org.id}.${secret}`, user, expiresAt: new Date(expires).toISOString() };
}

export type LinkState =
  | { ok: true; org: Org; linkId: string; createdBy: string; user: { id: string; name: string; role: Role } }
  | { ok: false; org: Org | null; reason: string };

const UNKNOWN = 'this sign-in link is not known here: check that it was copied whole';

/** What a link is, without spending it: for the page its GET shows. */
export async function inspectLoginLink(q: Queryable, token: string): Promise<LinkState> {
  const m = TOKEN.exec(token);
  const org = m ? await orgById(q, m[1]!) : null;
  if (!m || !org) return { ok: false, org: null, reason: UNKNOWN };
  const s = ident(org.schema);
  const row = (
    await q.query<{
      id: string;
      created_by: string;
      used_at: Date | null;
      expired: boolean;
      user_id: string;
      name: string;
      role: Role;
      active: boolean;
      deleted: boolean;
    }>(
      `SELECT l.id, l.created_by, l.used_at, l.expires_at <= now() AS expired, u.id AS user_id, u.name, u.role, u.active, u.deleted_at IS NOT NULL AS deleted
         FROM ${s}.login_links l JOIN ${s}.users u ON u.id = l.user_id WHERE l.secret_hash = $1`,
      [hashKey(m[2]!)],
    )
  ).rows[0];
  if (!row) return { ok: false, org, reason: UNKNOWN };
  if (row.used_at)
    return {
      ok: false,
      org,
      reason: `this sign-in link was used already (${new Date(row.used_at).toISOString().slice(0, 16).replace('T', ' ')} UTC): a link works once`,
    };
  if (row.expired) return { ok: false, org, reason: `this sign-in link has expired: a link works for ${LINK_MINUTES} minutes` };
  if (!row.active || row.deleted) return { ok: false, org, reason: `${row.name} is deactivated in ${org.slug}` };
  return { ok: true, org, linkId: row.id, createdBy: row.created_by, user: { id: row.user_id, name: row.name, role: row.role } };
}

/**
 * Spends a link for a new browser session of its person, in the caller's transaction: the link
 * is marked used in the same statement that checks it, so two browsers racing get one session.
 */
export async function useLoginLink(
  q: Queryable,
  token: string,
): Promise<(Extract<LinkState, { ok: true }> & { cookie: string; session: LoginSession }) | Extract<LinkState, { ok: false }>> {
  const state = await inspectLoginLink(q, token);
  if (!state.ok) return state;
  const s = ident(state.org.schema);
  const spent = await q.query(
    `UPDATE ${s}.login_links SET used_at = now() WHERE id = $1 AND used_at IS NULL AND expires_at > now() RETURNING id`,
    [state.linkId],
  );
  if (spent.rows.length === 0) return { ok: false, org: state.org, reason: 'this sign-in link was used already: a link works once' };
  const made = await createSession(q, state.org, state.user.id);
  await q.query(`UPDATE ${s}.login_links SET session_id = $2 WHERE id = $1`, [state.linkId, made.session.id]);
  return { ...state, ...made };
}

/** The organization's first admin (the oldest active admin person): whom svc hub login-link names by default. */
export async function firstAdmin(q: Queryable, org: Org): Promise<string> {
  const r = await q.query<{ name: string }>(
    `SELECT name FROM ${ident(org.schema)}.users WHERE role = 'admin' AND kind = 'person' AND active AND deleted_at IS NULL ORDER BY created_at, name LIMIT 1`,
  );
  if (!r.rows[0]) throw conflict(`${org.slug} has no active admin: make one with svc hub org admin add --org ${org.slug} --user <name>`);
  return r.rows[0].name;
}
