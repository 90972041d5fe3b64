import type { EmbedderProvider } from '../../engine/backend.js';
import type { RerankSetting } from '../../engine/rerank/reranker.js';
import type { ToolCall } from '../../engine/mcp/server.js';
import { ToolFailure, toErrorResult, type ToolResult } from '../../engine/mcp/dispatch.js';
import type { AnyToolDef, ToolContext } from '../../engine/mcp/types.js';
import type { Database, Principal } from '../contracts.js';
import type { AuditEntry } from '../audit/audit-log.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { takeIngest } from '../limits/rate-limit.js';
import type { Gatekeeper } from '../http/gatekeeper.js';
import type { McpSession } from './sessions.js';
import { allowed, toolPolicy } from './tool-policy.js';
import { adminAction } from '../../engine/mcp/tools.js';
import { PgPackRegistry } from '../packs/pack-registry.js';
import { Policy } from '../access/policy.js';
import { SvcError } from '../../engine/errors.js';
import { toProblem } from '../http/problem.js';

// The spec's tool-call pipeline, after the transport checked the token and looked up the session:
// a write counts against the user's ingest cap; arguments sanitized (client-only fields such as
// `llm_*` dropped); the tool run on an engine bound to the caller's policy (hub/access/policy.ts:
// every read and write of engrams, episodes, sessions and events is checked there); before each
// tool runs, the svc_admin's action included, `authorize`: not a tool of a developer's machine,
// allowed by the organization, no write by a viewer or to a scope named that it may not write;
// the answer sanitized (local fields such as `storage_root` dropped); the audit row: a write's in
// the same transaction as the write, a read's queued. Webhook events come from the writes themselves.

export interface PipelineDeps {
  gate: Gatekeeper;
  embedder: EmbedderProvider;
  reranker?: RerankSetting;
}

/** Fields of a tool's arguments that only a client on its own machine may set. */
const CLIENT_ONLY_ARGUMENT = /^llm_/;
/** Fields of an answer that describe the server's own machine. */
const LOCAL_FIELDS = new Set(['storage_root', 'id_prefix', 'quarantined']);

export function toolPipeline(
  deps: PipelineDeps,
  p: Principal,
  session: McpSession,
): (call: ToolCall, run: (ctx: ToolContext, args: unknown) => Promise<ToolResult>) => Promise<ToolResult> {
  const { db, audit, config, log } = deps.gate.deps;
  const policy = Policy.of(p);
  return async (call, run) => {
    const entry = (outcome: number, resource: string | null = null): AuditEntry => ({
      at: new Date().toISOString(),
      actor: p.userName,
      token_id: p.tokenId,
      action: `MCP ${call.name}`,
      resource,
      outcome,
      details: { session: session.id },
    });
    // The status of the audit row of a call that failed: a refusal is a 403, bad arguments a 400.
    let failure = 400;
    const refuse = (message: string): never => {
      throw new SvcError('forbidden', message);
    };
    const tools = await toolPolicy(db, p.org, p.epoch);
    // Every tool the call runs, svc_admin's action included, passes here before it runs.
    const authorize = (tool: AnyToolDef, args: Record<string, unknown>): void => {
      if (tool.dispatches) return; // the tool it runs comes through here itself
      if (tool.machineLocal)
        refuse(`${tool.name} works on a developer's machine (it ${tool.machineLocal}): run it with svc mcp there, not on the hub`);
      if (!allowed(tools, tool.name))
        refuse(`${tool.name} is not allowed in this organization (an admin sets which tools: PUT /api/v1/admin/mcp/tools)`);
      if (tool.readOnly) return;
      if (p.role === 'viewer') refuse(`${p.userName} is a viewer: viewers change nothing (${tool.name} writes)`);
      const denied = scopesNamed(args).find((s) => !policy.mayWrite(s));
      if (denied) refuse(`${p.userName} may not write scope "${denied}" (writable: ${p.writable.join(', ') || 'none'})`);
    };

    // svc_admin is as much a write as the tool it runs.
    const tool = call.tool?.dispatches ? (adminAction((call.args as { action?: unknown } | null)?.action) ?? call.tool) : call.tool;
    const write = tool !== undefined && !tool.readOnly;
    if (write) {
      const ingest = await takeIngest(db, p.org, p.userId, config.rateLimits);
      if (!ingest.allowed) {
        audit.record(p.org, entry(429));
        return toErrorResult(
          new ToolFailure(
            `${p.userName} has written ${config.rateLimits.ingestPerMinute} times this minute through MCP, the most allowed; retry in ${ingest.retryAfter} s`,
          ),
        );
      }
    }
    const args = sanitizeArguments(call.args);
    const contextOn = (q: Database): ToolContext => ({
      backend: openOrgBackend(q, p.org, policy),
      packs: new PgPackRegistry(q, p.org, policy),
      embedder: deps.embedder,
      ...(deps.reranker ? { reranker: deps.reranker } : {}),
      now: () => new Date(),
      project: { scope: `user:${p.userName}` },
      agent: session.clientName ?? call.client.name ?? p.userName,
      log: (m: string) => log.warn({ event: 'mcp.tool_warning' }, m),
      authorize,
      failed: (err) => {
        failure = err instanceof ToolFailure ? 400 : toProblem(err).status;
      },
    });
    return deps.gate.runAudited(p.org, {
      write,
      // svc_admin's actions (people, keys, invitations by mail) run alone.
      grouped: write && !call.tool?.dispatches,
      work: async (q) => sanitizeResult(await run(contextOn(q), args)),
      outcome: (result) => (result.isError ? failure : 200),
      failure: () => 500,
      row: (outcome, result) => entry(outcome, outcome < 400 && result && write ? resourceOf(result) : null),
    });
  };
}

function sanitizeArguments(args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return args;
  return Object.fromEntries(Object.entries(args).filter(([k]) => !CLIENT_ONLY_ARGUMENT.test(k)));
}

/** Every scope a write's arguments name: its own, its items', its learnings'. */
function scopesNamed(args: Record<string, unknown>): string[] {
  const nested = [args.items, args.learnings]
    .flatMap((list) => (Array.isArray(list) ? list : []))
    .map((x) => (x as Record<string, unknown> | null)?.scope);
  return [args.scope, ...nested].filter((s): s is string => typeof s === 'string');
}

function sanitizeResult(result: ToolResult): ToolResult {
  // Most answers (recall's, say) hold no local field: they go out as they are, not copied.
  if (result.isError || !result.structuredContent || !holdsLocalField(result.structuredContent)) return result;
  const clean = strip(result.structuredContent) as Record<string, unknown>;
  return { ...result, content: [{ type: 'text', text: JSON.stringify(clean) }], structuredContent: clean };
}

function holdsLocalField(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsLocalField);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(([k, v]) => LOCAL_FIELDS.has(k) || holdsLocalField(v));
}

function strip(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([k]) => !LOCAL_FIELDS.has(k))
      .map(([k, v]) => [k, strip(v)]),
  );
}

/** What the audit row names: the engram or session the call wrote. */
function resourceOf(result: ToolResult): string | null {
  const v = result.structuredContent as { id?: unknown; engram?: { id?: unknown }; session?: { id?: unknown } } | undefined;
  const id = v?.engram?.id ?? v?.id ?? v?.session?.id;
  if (typeof id !== 'string') return null;
  return id.startsWith('SES-') ? `session:${id}` : id.startsWith('ENG-') ? `engram:${id}` : null;
}
