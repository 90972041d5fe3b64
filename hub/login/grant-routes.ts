import type Router from '@koa/router';
import type { HubState, Org, Queryable } from '../contracts.js';
import { CONTROL_SCHEMA, ident } from '../data/sql.js';
import { authChanged } from '../access/epoch.js';
import { notFoundProblem } from '../http/problem.js';
import { requireAdmin, type Ctx } from '../http/route-kit.js';

// An MCP client's OAuth grant is a login_sessions row of its organization (client_id set): its
// secret is the refresh token, and every access token issued from it carries its id (`sid`), so
// ending the row ends them all at once (hub/http/auth.ts checks the session on each token; the
// epoch bump drops cached principals on every process). People list and revoke their own grants,
// admins anyone's:
//
//   GET    /api/v1/me/grants            DELETE /api/v1/me/grants/{id}
//   GET    /api/v1/admin/grants         DELETE /api/v1/admin/grants/{id}
//
// Sign-out ends the grants consented from that browser session (endGrantsOfSession); removing a
// provider ends the sessions signed in through it, grants included (they carry its id).

const S = CONTROL_SCHEMA;

export interface Grant {
  id: string;
  user_id: string;
  user_name: string;
  client_id: string;
  client_name: string;
  /** Where the client's redirect URIs point (hosts): what the person consented to. */
  redirect_hosts: string[];
  resource: string | null;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

interface GrantRow extends Omit<Grant, 'redirect_hosts' | 'created_at' | 'expires_at' | 'revoked_at'> {
  redirect_uris: string[] | null;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

const hostOf = (uri: string): string => {
  try {
    return new URL(uri).host;
  } catch {
    return uri;
  }
};

const toGrant = ({ redirect_uris, ...r }: GrantRow): Grant => ({
  ...r,
  client_name: r.client_name ?? 'a removed client',
  redirect_hosts: [...new Set((redirect_uris ?? []).map(hostOf))],
  created_at: new Date(r.created_at).toISOString(),
  expires_at: new Date(r.expires_at).toISOString(),
  revoked_at: r.revoked_at ? new Date(r.revoked_at).toISOString() : null,
});

const SELECT = (
  org: Org,
) => `SELECT l.id, l.user_id, u.name AS user_name, l.client_id, c.client_name, c.redirect_uris, g.resource, l.created_at, l.expires_at, l.revoked_at
  FROM ${ident(org.schema)}.login_sessions l JOIN ${ident(org.schema)}.users u ON u.id = l.user_id
  LEFT JOIN ${S}.oauth_clients c ON c.client_id = l.client_id
  LEFT JOIN ${S}.oauth_grants g ON g.id = l.id`;

/** The live grants of the organization (or of one person), newest first. */
export async function listGrants(q: Queryable, org: Org, userId?: string): Promise<Grant[]> {
  const r = await q.query<GrantRow>(
    `${SELECT(org)} WHERE l.client_id IS NOT NULL AND l.revoked_at IS NULL AND l.expires_at > now() AND ($1::text IS NULL OR l.user_id = $1)
      ORDER BY l.created_at DESC, l.id LIMIT 1000`,
    [userId ?? null],
  );
  return r.rows.map(toGrant);
}

/** Ends one grant (of `userId` only, when given): its refresh token and every access token from it. Null when there is none. */
export async function revokeGrant(q: Queryable, org: Org, id: string, userId?: string): Promise<Grant | null> {
  const r = await q.query<{ id: string }>(
    `UPDATE ${ident(org.schema)}.login_sessions SET revoked_at = coalesce(revoked_at, now())
      WHERE id = $1 AND client_id IS NOT NULL AND ($2::text IS NULL OR user_id = $2) RETURNING id`,
    [id, userId ?? null],
  );
  if (!r.rows[0]) return null;
  await authChanged(q, org);
  return toGrant((await q.query<GrantRow>(`${SELECT(org)} WHERE l.id = $1`, [id])).rows[0]!);
}

/** Signing out of a browser session ends the grants consented from it. */
export async function endGrantsOfSession(q: Queryable, org: Org, sessionId: string): Promise<void> {
  const r = await q.query<{ id: string }>(
    `UPDATE ${ident(org.schema)}.login_sessions SET revoked_at = now()
      WHERE revoked_at IS NULL AND id IN (SELECT id FROM ${S}.oauth_grants WHERE org_id = $1 AND consent_session = $2) RETURNING id`,
    [org.id, sessionId],
  );
  if (r.rows.length) await authChanged(q, org);
}

export function registerGrantRoutes(router: Router<HubState>): void {
  router.get('/me/grants', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    ctx.body = { items: await listGrants(ctx.state.db, p.org, p.userId) };
  });
  router.delete('/me/grants/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    ctx.state.auditResource = `oauth_grant:${ctx.params.id}`;
    const g = await revokeGrant(ctx.state.db, p.org, ctx.params.id!, p.userId);
    if (!g) throw notFoundProblem(`no grant ${ctx.params.id} of yours`);
    ctx.body = g;
  });
  router.get('/admin/grants', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const user = typeof ctx.query.user_id === 'string' && ctx.query.user_id ? ctx.query.user_id : undefined;
    ctx.body = { items: await listGrants(ctx.state.db, p.org, user) };
  });
  router.delete('/admin/grants/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    ctx.state.auditResource = `oauth_grant:${ctx.params.id}`;
    const g = await revokeGrant(ctx.state.db, p.org, ctx.params.id!);
    if (!g) throw notFoundProblem(`no grant ${ctx.params.id}`);
    ctx.state.auditDetails = { user: g.user_name, client: g.client_name };
    ctx.body = g;
  });
}
