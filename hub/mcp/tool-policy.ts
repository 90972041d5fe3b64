import type Router from '@koa/router';
import type { Database, HubState, Org } from '../contracts.js';
import { ident } from '../data/sql.js';
import { authChanged } from '../access/epoch.js';
import { validBody } from '../openapi/spec.js';
import { ALL_TOOLS } from '../../engine/mcp/tools.js';
import { badRequest } from '../http/problem.js';
import { requireAdmin, type Ctx } from '../http/route-kit.js';

// Which MCP tools the hub runs. Tools that work on the developer's machine only (a local store,
// its files, its git remote: `machineLocal` in their definition) the hub refuses with one line
// saying so (hub/mcp/pipeline.ts). On top, each
// organization may allow and deny tools (GET/PUT /api/v1/admin/mcp/tools); a change takes effect
// on every hub process at the next call (it moves the organization's authorization epoch).

export interface ToolPolicy {
  /** null: every tool. */
  allow: string[] | null;
  deny: string[];
}

const OPEN: ToolPolicy = { allow: null, deny: [] };

export function allowed(policy: ToolPolicy, name: string): boolean {
  return (policy.allow === null || policy.allow.includes(name)) && !policy.deny.includes(name);
}

const cache = new Map<string, { epoch: number; policy: ToolPolicy }>();

/** The organization's policy, read once per authorization epoch. */
export async function toolPolicy(db: Database, org: Org, epoch: number): Promise<ToolPolicy> {
  const hit = cache.get(org.id);
  if (hit && hit.epoch === epoch) return hit.policy;
  const row = (await db.query<{ allow: string[] | null; deny: string[] }>(`SELECT allow, deny FROM ${ident(org.schema)}.mcp_tool_policy`))
    .rows[0];
  const policy = row ? { allow: row.allow, deny: row.deny } : OPEN;
  cache.set(org.id, { epoch, policy });
  return policy;
}

export function registerToolPolicyRoutes(router: Router<HubState>): void {
  router.get('/admin/mcp/tools', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    ctx.body = await describe(ctx.state.db, ctx.state.principal.org);
  });
  router.put('/admin/mcp/tools', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const body = await validBody<{ allow?: string[] | null; deny?: string[] }>('McpToolPolicy', ctx.request.body);
    const known = new Set(ALL_TOOLS.map((t) => t.name));
    const unknown = [...(body.allow ?? []), ...(body.deny ?? [])].filter((n) => !known.has(n));
    if (unknown.length) throw badRequest(`unknown MCP tools: ${unknown.join(', ')}`);
    const org = ctx.state.principal.org;
    await ctx.state.db.query(
      `INSERT INTO ${ident(org.schema)}.mcp_tool_policy (singleton, allow, deny, updated_at) VALUES (true, $1, $2, now())
       ON CONFLICT (singleton) DO UPDATE SET allow = excluded.allow, deny = excluded.deny, updated_at = now()`,
      [body.allow ?? null, body.deny ?? []],
    );
    await authChanged(ctx.state.db, org);
    ctx.state.auditDetails = { allow: body.allow ?? null, deny: body.deny ?? [] };
    ctx.body = await describe(ctx.state.db, org);
  });
}

async function describe(db: Database, org: Org): Promise<{ allow: string[] | null; deny: string[]; local_only: string[] }> {
  const row = (await db.query<{ allow: string[] | null; deny: string[] }>(`SELECT allow, deny FROM ${ident(org.schema)}.mcp_tool_policy`))
    .rows[0];
  return { allow: row?.allow ?? null, deny: row?.deny ?? [], local_only: ALL_TOOLS.filter((t) => t.machineLocal).map((t) => t.name) };
}
