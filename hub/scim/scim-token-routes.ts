import type Router from '@koa/router';
import type { HubState } from '../contracts.js';
import { validBody } from '../openapi/spec.js';
import { requireAdmin, type Ctx } from '../http/route-kit.js';
import { createScimToken, listScimTokens, revokeScimToken } from './scim-tokens.js';

// /api/v1/admin/scim-tokens: admins create (the token is in that answer only), list and revoke
// the tokens their identity provider provisions with. They pass the /api/v1 gate like every
// REST route, which writes their audit rows.

export function registerScimTokenRoutes(router: Router<HubState>): void {
  router.get('/admin/scim-tokens', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    ctx.body = { items: await listScimTokens(ctx.state.db, ctx.state.principal.org) };
  });
  router.post('/admin/scim-tokens', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const body = await validBody<{ name: string }>('CreateScimToken', ctx.request.body);
    const p = ctx.state.principal;
    const { token, info } = await createScimToken(ctx.state.db, p.org, body.name.trim(), p.userName);
    ctx.state.auditResource = `scim_token:${info.id}`;
    ctx.state.auditDetails = { name: info.name };
    ctx.status = 201;
    ctx.body = { ...info, token };
  });
  router.delete('/admin/scim-tokens/:id', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    ctx.state.auditResource = `scim_token:${ctx.params.id}`;
    ctx.body = await revokeScimToken(ctx.state.db, ctx.state.principal.org, ctx.params.id!);
  });
}
