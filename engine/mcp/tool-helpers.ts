import type { OpContext } from '../ops/context.js';
import type { TeamSource } from '../ops/recall.js';
import type { ToolContext } from './types.js';

// What the MCP tool families (memory, sessions, packs, tensions, ingest, team) share: the
// operations' context for a call, and the hub as a recall source when the project names one.

export const opContext = (ctx: ToolContext, sessionId?: string | null): OpContext => ({
  now: () => ctx.now(),
  sessionId: sessionId ?? null,
});

/** The hub as a recall source, when `svc mcp` runs in a project that names one. */
export async function teamOf(ctx: ToolContext): Promise<{ team?: TeamSource }> {
  if (!ctx.remote || !ctx.local) return {};
  const [{ hubSource }, { REMOTE_WRITE_TIMEOUT_MS }] = await Promise.all([
    import('../remote/team-recall.js'),
    import('../remote/team-outbox.js'),
  ]);
  // Once the hub answered, what waits in the outbox may take a write's time to go.
  return { team: hubSource(ctx.local.root, ctx.remote, { sendMs: REMOTE_WRITE_TIMEOUT_MS }) };
}
