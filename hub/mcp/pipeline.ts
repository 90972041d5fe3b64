import type { EmbedderProvider } from '../../engine/backend.js';
import type { RerankSetting } from '../../engine/ops/recall.js';
import type { ToolCall } from '../../engine/mcp/server.js';
import { ToolFailure, toErrorResult, type ToolResult } from '../../engine/mcp/dispatch.js';
import type { ToolContext } from '../../engine/mcp/types.js';
import type { Database, Principal } from '../contracts.js';
import type { AuditEntry } from '../audit/audit-log.js';
import { openOrgBackend } from '../data/pg-backend.js';
import { RequestDatabase } from '../data/request-database.js';
import { takeIngest } from '../limits/rate-limit.js';
import type { Gatekeeper } from '../server/gatekeeper.js';
import type { McpSession } from './sessions.js';
import { allowed, localOnlyMessage, toolPolicy } from './tool-policy.js';
import { mcpWriteGuard } from './write-guard.js';

// The spec's tool-call pipeline, after the transport checked the token and looked up the session:
// the tool allowed (not one of a developer's machine, and by the organization's policy);
// arguments sanitized (client-only fields such as `llm_*` dropped); write checks (a viewer writes
// nothing, every scope named must be writable, the user's ingest cap); the tool run on an engine
// bound to the user's resolved scopes (and every engram write checked: write-guard.ts); the answer
// sanitized (local fields such as `storage_root` dropped); the audit row: a write's in the same
// transaction as the write, a read's queued. Webhook events come from the writes themselves.

export interface PipelineDeps {
  gate: Gatekeeper;
  embedder: EmbedderProvider;
  reranker?: RerankSetting;
}

/** Fields of a tool's arguments that only a client on its own machine may set. */
const CLIENT_ONLY_ARGUMENT = /^llm_/;
/** Fields of an answer that describe the server's own machine. */
const LOCAL_FIELDS = new Set(['storage_root', 'id_prefix', 'quarantined']);

export function toolPipeline(deps: PipelineDeps, p: Principal, session: McpSession): (call: ToolCall, run: (ctx: ToolContext, args: unknown) => Promise<ToolResult>) => Promise<ToolResult> {
  const { db, audit, config, log } = deps.gate.deps;
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
    const refuse = (outcome: number, message: string): ToolResult => {
      audit.record(p.org, entry(outcome));
      return toErrorResult(new ToolFailure(message));
    };

    const local = localOnlyMessage(call.name);
    if (local) return refuse(403, local);
    if (!allowed(await toolPolicy(db, p.org, p.epoch), call.name)) {
      return refuse(403, `${call.name} is not allowed in this organization (an admin sets which tools: PUT /api/v1/admin/mcp/tools)`);
    }
    const args = sanitizeArguments(call.args);
    const write = call.tool !== undefined && !call.tool.readOnly;
    if (write) {
      if (p.role === 'viewer') return refuse(403, `${p.userName} is a viewer: viewers change nothing (${call.name} writes)`);
      const denied = scopesNamed(args).find((s) => !p.writable.includes(s));
      if (denied) return refuse(403, `${p.userName} may not write scope "${denied}" (writable: ${p.writable.join(', ') || 'none'})`);
      const ingest = await takeIngest(db, p.org, p.userId, config.rateLimits);
      if (!ingest.allowed) return refuse(429, `${p.userName} has written ${config.rateLimits.ingestPerMinute} times this minute through MCP, the most allowed; retry in ${ingest.retryAfter} s`);
    }

    const contextOn = (q: Database): ToolContext => ({
      backend: openOrgBackend(q, p.org, { readable: p.readable, owner: p.userName, guard: mcpWriteGuard(p) }),
      embedder: deps.embedder,
      ...(deps.reranker ? { reranker: deps.reranker } : {}),
      now: () => new Date(),
      project: { scope: `user:${p.userName}` },
      agent: session.clientName ?? call.client.name ?? p.userName,
      log,
    });
    if (!write) {
      const result = await run(contextOn(db), args);
      audit.record(p.org, entry(result.isError ? 400 : 200));
      return sanitizeResult(result);
    }
    const rdb = new RequestDatabase(db);
    let result: ToolResult;
    try {
      result = await run(contextOn(rdb), args);
    } catch (err) {
      await rdb.rollback();
      audit.record(p.org, entry(500));
      throw err;
    }
    if (result.isError) {
      await rdb.rollback();
      audit.record(p.org, entry(400));
      return result;
    }
    await deps.gate.commitWithAudit(rdb, p.org, entry(200, resourceOf(result)));
    return sanitizeResult(result);
  };
}

function sanitizeArguments(args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return args;
  return Object.fromEntries(Object.entries(args).filter(([k]) => !CLIENT_ONLY_ARGUMENT.test(k)));
}

/** Every scope a write's arguments name: its own, its items', its learnings'. */
function scopesNamed(args: unknown): string[] {
  if (args === null || typeof args !== 'object') return [];
  const a = args as Record<string, unknown>;
  const nested = [a.items, a.learnings].flatMap((list) => (Array.isArray(list) ? list : [])).map((x) => (x as Record<string, unknown> | null)?.scope);
  return [a.scope, ...nested].filter((s): s is string => typeof s === 'string');
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
  return Object.fromEntries(Object.entries(value).filter(([k]) => !LOCAL_FIELDS.has(k)).map(([k, v]) => [k, strip(v)]));
}

/** What the audit row names: the engram or session the call wrote. */
function resourceOf(result: ToolResult): string | null {
  const v = result.structuredContent as { id?: unknown; engram?: { id?: unknown }; session?: { id?: unknown } } | undefined;
  const id = v?.engram?.id ?? v?.id ?? v?.session?.id;
  if (typeof id !== 'string') return null;
  return id.startsWith('SES-') ? `session:${id}` : id.startsWith('ENG-') ? `engram:${id}` : null;
}
