import type Router from '@koa/router';
import type { Database, HubState, Role } from '../../contracts.js';
import { addMember, createGroup, createUser, issueApiKey, listApiKeys, listGroups, listUsers, revokeApiKey } from '../../access/identity.js';
import { queryAudit } from '../../audit/audit-log.js';
import { insights } from '../../data/insights.js';
import { validBody } from '../../openapi/spec.js';
import { badRequest } from '../problem.js';
import { decodeCursor, encodeCursor, isoQuery, pageLimit, queryText, requireAdmin, type Ctx } from './route-kit.js';

// Who am I (/me), and the admin routes: users, groups and members, API keys, audit, insights.

function paged<T>(items: T[], limit: number, key: (t: T) => string | number): { items: T[]; next_cursor: string | null } {
  return { items, next_cursor: items.length === limit ? encodeCursor(key(items[items.length - 1]!)) : null };
}

export function registerIdentityRoutes(router: Router<HubState>, db: Database): void {
  router.get('/me', (ctx: Ctx) => {
    const p = ctx.state.principal;
    ctx.body = {
      user: { id: p.userId, name: p.userName },
      org: { id: p.org.id, slug: p.org.slug },
      role: p.role,
      token: { id: p.tokenId, kind: p.via },
      scopes: { readable: p.readable, writable: p.writable },
    };
  });

  // Every admin route needs the admin role.
  router.use('/admin', async (ctx, next) => {
    requireAdmin(ctx.state.principal);
    await next();
  });

  router.get('/admin/users', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listUsers(db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (u) => u.name);
  });
  router.post('/admin/users', async (ctx: Ctx) => {
    const body = await validBody<{ name: string; email?: string; role: Role }>('CreateUser', ctx.request.body);
    const user = await createUser(db, ctx.state.principal.org, { name: body.name, email: body.email, role: body.role ?? 'editor' });
    ctx.state.auditResource = `user:${user.id}`;
    ctx.status = 201;
    ctx.body = user;
  });

  router.get('/admin/groups', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listGroups(db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (g) => g.path);
  });
  router.post('/admin/groups', async (ctx: Ctx) => {
    const body = await validBody<{ path: string }>('CreateGroup', ctx.request.body);
    const group = await createGroup(db, ctx.state.principal.org, body.path);
    ctx.state.auditResource = `group:${group.id}`;
    ctx.status = 201;
    ctx.body = group;
  });
  router.post('/admin/groups/:id/members', async (ctx: Ctx) => {
    const body = await validBody<{ user_id: string; read_only: boolean }>('AddMember', ctx.request.body);
    const m = await addMember(db, ctx.state.principal.org, ctx.params.id!, body.user_id, body.read_only ?? false);
    ctx.state.auditResource = `group:${m.group.id}`;
    ctx.state.auditDetails = { user_id: body.user_id, read_only: m.read_only };
    ctx.body = m;
  });

  router.get('/admin/api-keys', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    ctx.body = paged(await listApiKeys(db, ctx.state.principal.org, { after: decodeCursor(ctx), limit }), limit, (k) => k.id);
  });
  router.post('/admin/api-keys', async (ctx: Ctx) => {
    const body = await validBody<{ user_id: string; name?: string }>('IssueApiKey', ctx.request.body);
    const { key, info } = await issueApiKey(db, ctx.state.principal.org, body.user_id, body.name ?? 'api key');
    ctx.state.auditResource = `api_key:${info.id}`;
    ctx.status = 201;
    ctx.body = { ...info, key };
  });
  router.delete('/admin/api-keys/:id', async (ctx: Ctx) => {
    const info = await revokeApiKey(db, ctx.state.principal.org, ctx.params.id!);
    ctx.state.auditResource = `api_key:${info.id}`;
    ctx.body = info;
  });

  router.get('/admin/audit', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    const cursor = decodeCursor(ctx);
    const after = cursor === undefined ? undefined : Number(cursor);
    if (after !== undefined && !Number.isInteger(after)) throw badRequest('cursor is not one this API gave out', ['cursor: invalid']);
    const rows = await queryAudit(db, ctx.state.principal.org, {
      actor: queryText(ctx, 'actor'),
      action: queryText(ctx, 'action'),
      resource: queryText(ctx, 'resource'),
      from: isoQuery(ctx, 'from'),
      to: isoQuery(ctx, 'to'),
      after,
      limit,
    });
    ctx.body = paged(rows, limit, (r) => r.seq);
  });

  router.get('/admin/insights', async (ctx: Ctx) => {
    ctx.body = await insights(db, ctx.state.principal.org);
  });
}
