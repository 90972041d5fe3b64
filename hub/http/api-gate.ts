import type { Middleware } from 'koa';
import type { EmbedderProvider } from '../../engine/backend.js';
import type { HubState } from '../contracts.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { ALL_TOOLS } from '../../engine/mcp/tools.js';
import { Policy } from '../access/policy.js';
import type { AuditEntry } from '../audit/audit-log.js';
import { toProblem } from './problem.js';
import { tooMany, type Gatekeeper } from './gatekeeper.js';
import type { RerankSetting } from '../../engine/rerank/reranker.js';

// Everything a call under /api/v1 passes before its route: the gatekeeper (the token, failed
// authentications, rate limits: gatekeeper.ts), then the route runs as the gatekeeper's audited
// unit (runAudited): a write in one transaction that also appends its audit row, so an
// acknowledged write always has its row; a read's row (and a refusal's) is queued.

/** POST routes that only read: searching and exporting change nothing. */
const READ_POSTS = new Set(['/api/v1/recall', '/api/v1/recall/bm25', '/api/v1/inject', '/api/v1/packs/export']);

/** The audit actions of calls that change nothing besides GETs: the read POSTs and the read-only MCP tools. */
export function readActions(): string[] {
  return [...[...READ_POSTS].map((p) => `POST ${p}`), ...ALL_TOOLS.filter((t) => t.readOnly).map((t) => `MCP ${t.name}`)];
}

export function isWrite(method: string, path: string): boolean {
  if (method === 'POST') return !READ_POSTS.has(path.replace(/\/+$/, ''));
  return method === 'PATCH' || method === 'PUT' || method === 'DELETE';
}

export interface ApiGateDeps {
  gate: Gatekeeper;
  embedder: EmbedderProvider;
  reranker?: RerankSetting;
}

export function apiGate({ gate, embedder, reranker }: ApiGateDeps): Middleware<HubState> {
  const { config, audit } = gate.deps;
  const limits = config.rateLimits;

  return async (ctx, next) => {
    const header = ctx.get('authorization') || undefined;
    const set = (k: string, v: string) => ctx.set(k, v);
    const write = isWrite(ctx.method, ctx.path);
    const { principal: p, decision } = await gate.admit(await gate.principal(ctx.ip, header, set, ctx), header, write, set);

    const entry = (outcome: number): AuditEntry => ({
      at: new Date().toISOString(),
      actor: p.userName,
      token_id: p.tokenId,
      action: `${ctx.method} ${ctx._matchedRoute ?? ctx.path}`,
      resource: ctx.state.auditResource ?? null,
      outcome,
      details: ctx.state.auditDetails ?? {},
    });
    if (!decision.allowed) {
      audit.record(p.org, entry(429));
      throw tooMany(decision, `this token may make ${limits.perMinute} requests and ${limits.writesPerMinute} writes per minute`);
    }

    ctx.state.principal = p;
    ctx.state.policy = Policy.of(p);
    ctx.state.embedder = embedder;
    ctx.state.reranker = reranker;
    await gate.runAudited(p.org, {
      write,
      grouped: write && ctx.path.startsWith('/api/v1/engrams'),
      work: async (q) => {
        ctx.state.db = q;
        ctx.state.backend = openOrgBackend(q, p.org, ctx.state.policy);
        await next();
      },
      outcome: () => ctx.status,
      failure: (err) => toProblem(err).status,
      row: entry,
    });
  };
}
