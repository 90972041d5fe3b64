import { z } from './sdk-deps.js';
import * as f from './fields.js';
import { defineTool } from './types.js';
import { ToolFailure } from './dispatch.js';
import type { FlushReport } from '../remote/team-writes.js';

// The tools of team memory on a developer's machine: which hub scopes may be used
// (svc_scopes_discover), where a statement should go (svc_suggest_scope), moving engrams between
// scopes and publishing them to the hub (svc_rescope), and the outbox of team writes
// (svc_outbox). Their engine parts live in engine/remote and engine/ops.

const scopesDiscover = defineTool({
  name: 'svc_scopes_discover',
  title: 'Discover scopes',
  description:
    'Ask the configured remote stores which scopes this user is authorized for; with register: true, add the unregistered shared-family scopes.',
  input: z.strictObject({
    register: z.boolean().default(false).describe('Register the discovered shared scopes that are not registered yet.'),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { register }) {
    if (!ctx.remote || !ctx.projectPath)
      throw new ToolFailure('no hub is configured for this project (.svc.yaml remote_url and remote_token; svc init-remote)');
    const { discoverScopes } = await import('../remote/discover.js');
    return discoverScopes(ctx.remote, ctx.projectPath, register);
  },
});

const suggestScope = defineTool({
  name: 'svc_suggest_scope',
  title: 'Suggest scope',
  description:
    'Which scope a statement would be routed to when learned without one: the best-matching scope with a confidence and the alternatives; global when no match is confident.',
  input: z.strictObject({
    statement: f.text('The statement about to be learned.'),
    domain: f.domain().optional(),
    limit: f.limit(3, 20, 'alternatives'),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { statement, domain, limit }) {
    const [{ suggestScope }, { teamOf }] = await Promise.all([import('../ops/suggest-scope.js'), import('./tool-helpers.js')]);
    return suggestScope(ctx.backend, statement, { ...(domain ? { domain } : {}), limit, ...(await teamOf(ctx)) });
  },
});

const rescope = defineTool({
  name: 'svc_rescope',
  title: 'Rescope',
  description: 'Move engrams to another scope (e.g. from global to project:<name>). Moving to a shared scope makes them visible to others.',
  input: z.strictObject({
    ids: z
      .array(f.engramId())
      .min(1, { error: 'must name at least one engram' })
      .max(500, { error: 'must name at most 500 engrams' })
      .describe('The engrams to move.'),
    scope: f.scope('The scope to move them to.'),
    reason: f.optionalText("Why, kept in each engram's history."),
  }),
  destructive: true,
  readOnly: false,
  async handler(ctx, { ids, scope, reason }) {
    const { rescope } = await import('../ops/rescope.js');
    const hub = ctx.remote && ctx.local ? (await import('../remote/team-writes.js')).hubPublisher(ctx.local.root, ctx.remote) : undefined;
    const items = await rescope(
      ctx.backend,
      ids,
      scope,
      { now: ctx.now, sessionId: null },
      { ...(reason ? { reason } : {}), ...(hub ? { hub } : {}) },
    );
    return { scope, items, moved: items.filter((i) => i.outcome === 'moved' || i.outcome === 'published').length };
  },
});

const outbox = defineTool({
  name: 'svc_outbox',
  title: 'Outbox',
  description:
    'Writes to remote team scopes that are queued after a timeout or failure, oldest first; with retry: true, try to deliver them now.',
  input: z.strictObject({
    retry: z.boolean().default(false).describe('Try to deliver the queued writes now.'),
    limit: f.limit(50, 1000, 'queued writes'),
  }),
  machineLocal: "is a local store's queue of writes to the hub",
  destructive: false,
  readOnly: false,
  async handler(ctx, { retry, limit }) {
    const root = ctx.local?.root;
    if (!root) throw new ToolFailure('svc_outbox works on a local store');
    const { readOutbox } = await import('../remote/team-outbox.js');
    let sent: FlushReport | null = null;
    if (retry) {
      if (!ctx.remote)
        throw new ToolFailure('no hub is configured for this project (.svc.yaml remote_url and remote_token; svc init-remote)');
      const { sendPending } = await import('../remote/team-writes.js');
      sent = await sendPending(root, ctx.remote);
    }
    const { entries, problems } = readOutbox(root);
    return {
      hub: ctx.remote?.url ?? null,
      ...(retry ? { sent: sent ?? { delivered: 0, refused: 0, pending: entries.filter((e) => !e.refused).length } } : {}),
      queued: entries.filter((e) => !e.refused).length,
      refused: entries.filter((e) => e.refused).length,
      entries: entries.slice(0, limit).map((e) => ({
        key: e.key,
        hub: e.url,
        scope: e.body.scope ?? null,
        statement: e.body.statement ?? null,
        queued_at: e.queued_at,
        attempts: e.attempts,
        state: e.refused ? 'refused' : 'queued',
        ...(e.last_error ? { last_error: e.last_error } : {}),
      })),
      ...(problems.length ? { problems } : {}),
    };
  },
});

/** The team-memory tools. */
export const TEAM_TOOLS = { scopesDiscover, suggestScope, rescope, outbox };
