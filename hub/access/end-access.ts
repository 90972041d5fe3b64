import { conflict, notFound } from '../../engine/errors.js';
import type { Org, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { authChanged } from './epoch.js';
import { erasePersonalData, type Erased } from './erase-personal.js';

// The one way a person's access ends, whichever surface asks (REST PATCH or DELETE of a user,
// the admin UI through REST, SCIM PATCH, PUT or DELETE). In the caller's transaction: the user
// is marked inactive (and, for a delete, hidden, unlinked and their own data erased: erase-personal.ts), and every credential they hold
// stops at once: API keys, browser sessions, OAuth grants (login_sessions rows with a client_id;
// their refresh token is the row's secret), unredeemed OAuth codes, hub tokens (token_version),
// MCP sessions and pending invitations. The organization's authorization epoch moves, so every
// hub process resolves its callers again on their next request.

export type EndMode = 'deactivate' | 'delete';

export interface Ended {
  user_id: string;
  mode: EndMode;
  api_keys: number;
  sessions: number;
  oauth_grants: number;
  mcp_sessions: number;
  invitations: number;
  /** A delete also erases the person's own data (erase-personal.ts). */
  erased?: Erased;
}

/**
 * Serializes changes to the organization's people (roles, deactivation, deletion) to the end of
 * the transaction, so two transactions demoting the last two admins cannot both pass. Take it
 * before any row of users is written in the transaction: an advisory lock taken after a row lock
 * can deadlock with one taken before it.
 */
export async function lockPeople(q: Queryable, org: Pick<Org, 'schema'>): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`svc_hub:people:${org.schema}`]);
}

/**
 * Refuses (409) to leave the organization without an active admin: call it before deactivating,
 * deleting or demoting `userId` (it takes lockPeople).
 */
export async function assertNotLastAdmin(q: Queryable, org: Org, userId: string, what: string): Promise<void> {
  await lockPeople(q, org);
  const admins = (
    await q.query<{ id: string; name: string }>(
      `SELECT id, name FROM ${ident(org.schema)}.users WHERE role = 'admin' AND active AND deleted_at IS NULL`,
    )
  ).rows;
  const target = admins.find((a) => a.id === userId);
  if (target && admins.length === 1) {
    throw conflict(
      `cannot ${what} ${target.name}: they are the last active admin of ${org.slug}; make someone else an admin first (or, on the hub's machine: svc hub org admin add --org ${org.slug} --user <name>)`,
    );
  }
}

/** Ends every access of a user (see above); throws not found when there is no such live user. */
export async function endAccess(q: Queryable, org: Org, userId: string, opts: { mode: EndMode }): Promise<Ended> {
  const s = ident(org.schema);
  await assertNotLastAdmin(q, org, userId, opts.mode);
  const found = (
    await q.query<{ id: string; name: string }>(`SELECT id, name FROM ${s}.users WHERE id = $1 AND deleted_at IS NULL`, [userId])
  ).rows[0];
  if (!found) throw notFound(`no user ${userId}`);
  await q.query(`UPDATE ${s}.users SET active = false, token_version = token_version + 1 WHERE id = $1`, [userId]);
  if (opts.mode === 'delete') {
    // Kept for the records that name it, but gone for SCIM and sign-in: its userName is free
    // again, and a person provisioned later with the same address is a new user.
    await q.query(`UPDATE ${s}.users SET deleted_at = now(), scim_user_name = NULL, email = NULL WHERE id = $1`, [userId]);
    await q.query(`DELETE FROM ${s}.memberships WHERE user_id = $1`, [userId]);
    await q.query(`DELETE FROM ${s}.external_identities WHERE user_id = $1`, [userId]);
  }
  const erased = opts.mode === 'delete' ? await erasePersonalData(q, org, userId, found.name) : undefined;
  const keys = await q.query<{ secret_hash: string }>(
    `UPDATE ${s}.api_keys SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING secret_hash`,
    [userId],
  );
  if (keys.rows.length > 0)
    await q.query(`DELETE FROM ${CONTROL_SCHEMA}.api_key_index WHERE secret_hash = ANY($1::text[])`, [keys.rows.map((k) => k.secret_hash)]);
  // Browser sessions and OAuth grants alike (a grant is a session with a client_id).
  const sessions = await q.query<{ is_grant: boolean }>(
    `UPDATE ${s}.login_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING client_id IS NOT NULL AS is_grant`,
    [userId],
  );
  // OAuth authorization codes not yet exchanged for a grant.
  await q.query(`DELETE FROM ${CONTROL_SCHEMA}.oauth_codes WHERE org_id = $1 AND user_id = $2`, [org.id, userId]);
  const mcp = await q.query(`UPDATE ${s}.mcp_sessions SET closed_at = now() WHERE user_id = $1 AND closed_at IS NULL RETURNING id`, [
    userId,
  ]);
  const invitations = await q.query<{ secret_hash: string }>(
    `DELETE FROM ${s}.invitations WHERE user_id = $1 AND redeemed_at IS NULL RETURNING secret_hash`,
    [userId],
  );
  if (invitations.rows.length > 0)
    await q.query(`DELETE FROM ${CONTROL_SCHEMA}.invitation_index WHERE secret_hash = ANY($1::text[])`, [
      invitations.rows.map((i) => i.secret_hash),
    ]);
  await authChanged(q, org);
  const grants = sessions.rows.filter((r) => r.is_grant).length;
  return {
    user_id: userId,
    mode: opts.mode,
    api_keys: keys.rows.length,
    sessions: sessions.rows.length - grants,
    oauth_grants: grants,
    mcp_sessions: mcp.rows.length,
    invitations: invitations.rows.length,
    ...(erased ? { erased } : {}),
  };
}
