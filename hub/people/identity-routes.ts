import { revokeGrant } from '../login/grant-routes.js';
import type Router from '@koa/router';
import { exportPerson } from './export-person.js';
import { ident } from '../data/sql.js';
import type { Database, HubState, Principal, Role } from '../contracts.js';
import {
  addMember,
  listMembers,
  removeMember,
  createGroup,
  createUser,
  deleteUser,
  getApiKey,
  getUser,
  issueApiKey,
  listApiKeys,
  listGroups,
  listUsers,
  redeemInvitation,
  revokeApiKey,
  revokeJwt,
  updateUser,
  type UserKind,
} from '../access/identity.js';
import { appendAudit, queryAudit } from '../audit/audit-log.js';
import type { Checkpointer } from '../audit/checkpoints.js';
import type { FailedAuthGuard } from '../limits/failed-auth.js';
import { insights } from '../data/insights.js';
import { validBody } from '../openapi/spec.js';
import { badRequest, conflictProblem, forbidden, HubProblem, notFoundProblem } from '../http/problem.js';
import type { HubConfig } from '../config.js';
import { hubOrigin } from '../http/hub-origin.js';
import { hasHadAccess } from '../access/identity.js';
import { invitePerson, type InviteInput } from '../admin/provision.js';
import { createLoginLink, LINK_MINUTES, linkPath } from '../login/login-links.js';
import { invitationMessage, MailFailed, sendMail, signInLinkMessage, type Message } from '../mail/mailer.js';
import { decodeCursor, decodeSeqCursor, encodeCursor, isoQuery, pageLimit, queryText, requireAdmin, type Ctx } from '../http/route-kit.js';
import { readActions } from '../http/api-gate.js';

// Who am I (/me, my keys, this token), the admin routes (users, groups and members, API keys,
// invitations, audit, insights), and redeeming an invitation (public).
//
// A key acts as its owner, so nobody mints a key that acts as another person: people create
// their own keys (/me/api-keys), or redeem an invitation an admin issued for their first one;
// admins issue keys only for themselves and for service accounts (users of kind "service",
// which are how machines get credentials). Admins may revoke anyone's key (offboarding): the
// audit row names whose it was.
//
// Routes that take a user take its id or its name. Deactivating (PATCH active false) and deleting
// a user end every access they hold at once (access/end-access.ts, shared with SCIM); no route
// may deactivate, delete or demote the organization's last active admin (409).

function paged<T>(items: T[], limit: number, key: (t: T) => string | number): { items: T[]; next_cursor: string | null } {
  return { items, next_cursor: items.length === limit ? encodeCursor(key(items[items.length - 1]!)) : null };
}

const me = (p: Principal) => ({
  user: { id: p.userId, name: p.userName },
  org: { id: p.org.id, slug: p.org.slug },
  role: p.role,
  token: { id: p.tokenId, kind: p.via },
  scopes: { readable: p.readable, writable: p.writable },
});

/** `?order=asc|desc` (absent: asc, oldest first, as the chain runs). */
function auditOrder(ctx: Ctx): 'asc' | 'desc' {
  const v = queryText(ctx, 'order') ?? 'asc';
  if (v !== 'asc' && v !== 'desc') throw badRequest(`order must be asc or desc (got "${v}")`, ['order: must be asc or desc']);
  return v;
}

/** Sends one message with the deployment's SMTP settings; a failure is a 502 that names the server's answer. */
async function mailOrFail(config: HubConfig, m: Message): Promise<void> {
  try {
    await sendMail(config.mail!, m);
  } catch (err) {
    if (err instanceof MailFailed) throw new HubProblem(502, 'mail-failed', 'E-mail not sent', err.message);
    throw err;
  }
}

export function registerIdentityRoutes(router: Router<HubState>, deps: { checkpoints: Checkpointer; config: HubConfig }): void {
  const { config } = deps;
  router.get('/me', (ctx: Ctx) => {
    ctx.body = me(ctx.state.principal);
  });

  // What a developer's svc asks to discover the scopes it may use, with their live engram counts.
  router.get('/me/scopes', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const counts = await ctx.state.db.query<{ scope: string; n: number }>(
      `SELECT scope, count(*)::int AS n FROM ${ident(p.org.schema)}.engrams WHERE status <> 'retired' AND scope = ANY($1::text[]) GROUP BY scope`,
      [p.readable],
    );
    const byScope = new Map(counts.rows.map((r) => [r.scope, Number(r.n)]));
    ctx.body = { items: p.readable.map((scope) => ({ scope, writable: p.writable.includes(scope), engrams: byScope.get(scope) ?? 0 })) };
  });

  // Everything the hub holds about the caller, as one JSON document to keep (export-person.ts).
  router.get('/me/export', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    ctx.set('content-disposition', `attachment; filename="svc-${p.org.slug}-${p.userName}.json"`);
    ctx.body = await exportPerson(ctx.state.db, p);
  });

  router.get('/me/api-keys', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    const p = ctx.state.principal;
    ctx.body = paged(await listApiKeys(ctx.state.db, p.org, { after: decodeCursor(ctx), limit, userId: p.userId }), limit, (k) => k.id);
  });
  router.post('/me/api-keys', async (ctx: Ctx) => {
    const body = await validBody<{ name?: string }>('CreateOwnApiKey', ctx.request.body ?? {});
    const p = ctx.state.principal;
    const { key, info } = await issueApiKey(ctx.state.db, p.org, p.userId, body.name ?? 'api key');
    ctx.state.auditResource = `api_key:${info.id}`;
    ctx.status = 201;
    ctx.body = { ...info, key };
  });
  router.delete('/me/api-keys/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const key = await getApiKey(ctx.state.db, p.org, ctx.params.id!);
    if (!key || key.user_id !== p.userId) throw notFoundProblem(`no API key ${ctx.params.id} of yours`);
    ctx.state.auditResource = `api_key:${key.id}`;
    ctx.body = await revokeApiKey(ctx.state.db, p.org, key.id);
  });
  // Ends the token this call carries: a key is revoked, a hub token (JWT) is revoked by its jti.
  router.delete('/me/token', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    if (p.via === 'api_key') await revokeApiKey(ctx.state.db, p.org, p.tokenId);
    else await revokeJwt(ctx.state.db, p.org, p.tokenId, new Date((p.expiresAt ?? Date.now() / 1000 + 86_400) * 1000));
    // An MCP client's access token ends its whole grant (refresh token included).
    if (p.grant) await revokeGrant(ctx.state.db, p.org, p.grant);
    ctx.state.auditResource = `${p.via === 'api_key' ? 'api_key' : 'token'}:${p.tokenId}`;
    ctx.body = { revoked: { id: p.tokenId, kind: p.via } };
  });

  // Every admin route needs the admin role.
  router.use('/admin', async (ctx, next) => {
    requireAdmin(ctx.state.principal);
    await next();
  });

  router.get('/admin/users', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listUsers(ctx.state.db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (u) => u.name);
  });
  router.post('/admin/users', async (ctx: Ctx) => {
    const body = await validBody<{ name: string; email?: string; role: Role; kind?: UserKind }>('CreateUser', ctx.request.body);
    const user = await createUser(ctx.state.db, ctx.state.principal.org, {
      name: body.name,
      email: body.email,
      role: body.role ?? 'editor',
      kind: body.kind,
    });
    ctx.state.auditResource = `user:${user.id}`;
    ctx.status = 201;
    ctx.body = user;
  });
  router.patch('/admin/users/:id', async (ctx: Ctx) => {
    const body = await validBody<{ role?: Role; active?: boolean }>('UpdateUser', ctx.request.body);
    const p = ctx.state.principal;
    const user = await getUser(ctx.state.db, p.org, ctx.params.id!);
    if (!user) throw notFoundProblem(`no user ${ctx.params.id}`);
    if (user.id === p.userId && (body.active === false || (body.role && body.role !== 'admin'))) {
      throw badRequest('an admin cannot demote or deactivate themselves; ask another admin', ['id: yourself']);
    }
    ctx.state.auditResource = `user:${user.id}`;
    ctx.state.auditDetails = body;
    ctx.body = await updateUser(ctx.state.db, p.org, user.id, body);
  });
  router.delete('/admin/users/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const user = await getUser(ctx.state.db, p.org, ctx.params.id!);
    if (!user) throw notFoundProblem(`no user ${ctx.params.id}`);
    if (user.id === p.userId) throw badRequest('an admin cannot delete themselves; ask another admin', ['id: yourself']);
    ctx.state.auditResource = `user:${user.id}`;
    const { user_id: _id, ...ended } = await deleteUser(ctx.state.db, p.org, user.id);
    ctx.state.auditDetails = ended;
    ctx.status = 204;
  });

  router.get('/admin/groups', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listGroups(ctx.state.db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (g) => g.path);
  });
  router.post('/admin/groups', async (ctx: Ctx) => {
    const body = await validBody<{ path: string }>('CreateGroup', ctx.request.body);
    const group = await createGroup(ctx.state.db, ctx.state.principal.org, body.path);
    ctx.state.auditResource = `group:${group.id}`;
    ctx.status = 201;
    ctx.body = group;
  });
  router.post('/admin/groups/:id/members', async (ctx: Ctx) => {
    const body = await validBody<{ user_id: string; read_only: boolean }>('AddMember', ctx.request.body);
    const m = await addMember(ctx.state.db, ctx.state.principal.org, ctx.params.id!, body.user_id, body.read_only ?? false);
    ctx.state.auditResource = `group:${m.group.id}`;
    ctx.state.auditDetails = { user_id: m.user.id, read_only: m.read_only };
    ctx.body = m;
  });

  router.get('/admin/groups/:id/members', async (ctx: Ctx) => {
    ctx.body = { items: await listMembers(ctx.state.db, ctx.state.principal.org, ctx.params.id!) };
  });
  router.delete('/admin/groups/:id/members/:user_id', async (ctx: Ctx) => {
    const g = await removeMember(ctx.state.db, ctx.state.principal.org, ctx.params.id!, ctx.params.user_id!);
    // By the group's id whether it was named by id or path, as adding a member records it.
    ctx.state.auditResource = `group:${g.id}`;
    ctx.state.auditDetails = { user_id: g.user_id };
    ctx.status = 204;
  });

  router.get('/admin/api-keys', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listApiKeys(ctx.state.db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (k) => k.id);
  });
  router.post('/admin/api-keys', async (ctx: Ctx) => {
    const body = await validBody<{ user_id: string; name?: string }>('IssueApiKey', ctx.request.body);
    const p = ctx.state.principal;
    const owner = await getUser(ctx.state.db, p.org, body.user_id);
    if (!owner) throw badRequest(`user_id: no user ${body.user_id} in this organization`, [`user_id: no user ${body.user_id}`]);
    if (owner.id !== p.userId && owner.kind !== 'service') {
      throw forbidden(
        `a key acts as its owner, and ${owner.name} is a person: they create their own keys, or redeem an invitation (POST /api/v1/admin/invitations) for their first one; machines get service accounts`,
      );
    }
    const { key, info } = await issueApiKey(ctx.state.db, p.org, owner.id, body.name ?? 'api key');
    ctx.state.auditResource = `api_key:${info.id}`;
    ctx.state.auditDetails = { owner: owner.name, kind: owner.kind };
    ctx.status = 201;
    ctx.body = { ...info, key };
  });
  router.delete('/admin/api-keys/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    const key = await getApiKey(ctx.state.db, p.org, ctx.params.id!);
    if (!key) throw notFoundProblem(`no API key ${ctx.params.id}`);
    const owner = await getUser(ctx.state.db, p.org, key.user_id);
    ctx.state.auditResource = `api_key:${key.id}`;
    // Revoking someone else's key is offboarding: the row says whose it was.
    ctx.state.auditDetails = { owner: owner?.name ?? key.user_id, own: key.user_id === p.userId };
    ctx.body = await revokeApiKey(ctx.state.db, p.org, key.id);
  });

  // An invitation for a person named by id or name (user_id), or by e-mail address (created when
  // nobody holds it): e-mailed when the hub has SMTP and the person an address, else in this answer.
  router.post('/admin/invitations', async (ctx: Ctx) => {
    const body = await validBody<{
      user_id?: string;
      email?: string;
      name?: string;
      role?: Role;
      group?: string;
      expires_in_hours?: number;
    }>('CreateInvitation', ctx.request.body);
    const p = ctx.state.principal;
    const input: InviteInput = {
      user: body.user_id,
      email: body.email,
      name: body.name,
      role: body.role,
      group: body.group,
      hours: body.expires_in_hours,
    };
    const r = await invitePerson(ctx.state.db, p.org, input, p.userName);
    const path = `/invite/${r.token}`;
    const emailed = Boolean(config.mail && r.user.email);
    if (emailed) {
      await mailOrFail(
        config,
        invitationMessage({
          org: p.org.slug,
          name: r.user.name,
          address: r.user.email!,
          url: hubOrigin(ctx, config) + path,
          by: p.userName,
          expiresAt: r.invitation.expires_at,
        }),
      );
    }
    ctx.state.auditResource = `invitation:${r.invitation.id}`;
    ctx.state.auditDetails = {
      user_id: r.user.id,
      user: r.user.name,
      created: r.created,
      group: r.group,
      emailed,
      expires_at: r.invitation.expires_at,
    };
    ctx.status = 201;
    // E-mailed: the link went to the person only.
    ctx.body = {
      ...r.invitation,
      user: { id: r.user.id, name: r.user.name, email: r.user.email, created: r.created },
      emailed,
      ...(emailed ? { sent_to: r.user.email } : { token: r.token, path, url: hubOrigin(ctx, config) + path }),
    };
  });

  // Whether the hub sends e-mail (the people page says where an invitation goes).
  router.get('/admin/mail', (ctx: Ctx) => {
    ctx.body = { configured: Boolean(config.mail), from: config.mail?.from ?? null };
  });

  // A single-use sign-in link (login-links.ts). A link acts as its person, so one for somebody
  // else who has had access goes only to their own e-mail address; the admin sees links for
  // themselves and for people who never signed in (as with invitations).
  router.post('/admin/login-links', async (ctx: Ctx) => {
    const body = await validBody<{ user?: string }>('CreateLoginLink', ctx.request.body ?? {});
    const p = ctx.state.principal;
    const link = await createLoginLink(ctx.state.db, p.org, body.user ?? p.userId, p.userName);
    const self = link.user.id === p.userId;
    const url = hubOrigin(ctx, config) + linkPath(link.token);
    const mail = !self && Boolean(config.mail && link.user.email);
    if (!self && !mail && (await hasHadAccess(ctx.state.db, p.org, link.user.id))) {
      throw conflictProblem(
        `a sign-in link acts as ${link.user.name}, who has signed in before: it goes only to their own e-mail address${config.mail ? ` (give ${link.user.name} one)` : ' (configure SVC_HUB_SMTP_URL and SVC_HUB_MAIL_FROM)'}, or the operator runs svc hub login-link on the hub's machine`,
      );
    }
    if (mail)
      await mailOrFail(
        config,
        signInLinkMessage({ org: p.org.slug, name: link.user.name, address: link.user.email!, url, minutes: LINK_MINUTES }),
      );
    ctx.state.auditResource = `user:${link.user.id}`;
    ctx.state.auditDetails = { link_id: link.id, user: link.user.name, emailed: mail, expires_at: link.expiresAt };
    ctx.status = 201;
    ctx.body = {
      id: link.id,
      user: { id: link.user.id, name: link.user.name },
      expires_at: link.expiresAt,
      emailed: mail,
      ...(mail ? { sent_to: link.user.email } : { path: linkPath(link.token), url }),
    };
  });

  router.get('/admin/audit', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    const rows = await queryAudit(ctx.state.db, ctx.state.principal.org, {
      actor: queryText(ctx, 'actor'),
      action: queryText(ctx, 'action'),
      resource: queryText(ctx, 'resource'),
      from: isoQuery(ctx, 'from'),
      to: isoQuery(ctx, 'to'),
      after: decodeSeqCursor(ctx),
      newestFirst: auditOrder(ctx) === 'desc',
      ...(queryText(ctx, 'changes') === 'true' ? { changesOnly: { reads: readActions() } } : {}),
      limit,
    });
    ctx.body = paged(rows, limit, (r) => r.seq);
  });

  // The whole chain verified now: the first row that breaks it, lost rows, unfinished writers.
  router.get('/admin/audit/verify', async (ctx: Ctx) => {
    ctx.body = await deps.checkpoints.verifyChain(ctx.state.principal.org);
  });

  // The chain's head, verified and signed: for an outside collector to keep (see checkpoints.ts).
  router.get('/admin/audit/checkpoint', async (ctx: Ctx) => {
    try {
      ctx.body = await deps.checkpoints.current(ctx.state.principal.org);
    } catch (err) {
      throw conflictProblem((err as Error).message);
    }
  });

  router.get('/admin/insights', async (ctx: Ctx) => {
    ctx.body = await insights(ctx.state.db, ctx.state.principal.org);
  });
}

/**
 * POST /api/v1/invitations/redeem: no bearer token (the invitation is the credential). A bad
 * invitation counts as a failed authentication of the caller's address. The new key's audit row
 * commits with it, in the invitation's organization.
 */
export function registerInvitationRoutes(router: Router, deps: { db: Database; failedAuth: FailedAuthGuard; auditKey: string }): void {
  router.post('/api/v1/invitations/redeem', async (ctx) => {
    deps.failedAuth.check(ctx.ip, false);
    const body = await validBody<{ token: string; key_name?: string }>('RedeemInvitation', ctx.request.body);
    const redeemed = await deps.db.transaction(async (q) => {
      const r = await redeemInvitation(q, body.token, body.key_name ?? 'api key');
      if (r) {
        await appendAudit(q, r.org, deps.auditKey, [
          // The invited person redeemed it (an invitation is only for someone who never had access).
          {
            at: new Date().toISOString(),
            actor: r.user.name,
            token_id: r.info.id,
            action: 'POST /api/v1/invitations/redeem',
            resource: `api_key:${r.info.id}`,
            outcome: 201,
            details: { invitation_id: r.invitationId, user_id: r.user.id, redeemed_by: r.user.name },
          },
        ]);
      }
      return r;
    });
    if (!redeemed) {
      await deps.failedAuth.failed(ctx.ip, (k, v) => ctx.set(k, v));
      throw badRequest('this invitation is unknown, already used or expired; ask an admin for a new one', ['token: invalid']);
    }
    ctx.status = 201;
    ctx.body = {
      ...redeemed.info,
      key: redeemed.key,
      user: { id: redeemed.user.id, name: redeemed.user.name },
      org: { id: redeemed.org.id, slug: redeemed.org.slug },
    };
  });
}
