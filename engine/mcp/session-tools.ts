import { z } from './sdk-deps.js';
import { capture, DEFAULT_TIMELINE_LIMIT, episodeToEngram, timeline } from '../ops/episodes.js';
import { endSession, sessionScope, startSession } from '../ops/sessions.js';
import { history, receipts } from '../ops/history.js';
import { DEFAULT_INJECT_BUDGET, MAX_INJECT_BUDGET, MIN_INJECT_BUDGET } from '../ops/inject-budget.js';
import type { DualCoding, KnowledgeAnchor } from '../model/engram-types.js';
import * as f from './fields.js';
import { learnSummary } from '../ops/result-json.js';
import { opContext, teamOf } from './tool-helpers.js';
import { defineTool, type AnyToolDef } from './types.js';

// Sessions (an agent's unit of work), episodes (what happened when), and an engram's history and
// injection receipts.

/** A short name (an agent, a channel): trimmed, 1 to 100 characters. */
const shortName = () => z.string().trim().min(1, { error: 'must not be empty' }).max(100, { error: 'must be at most 100 characters' });
const agentField = () => shortName().describe("The agent, e.g. claude-code (default: the MCP client's name).");

export const sessionStartTool = defineTool({
  name: 'svc_session_start',
  title: 'Start session',
  description:
    'Start a unit of work. Returns the session (keep its id for svc_session_end, svc_learn, svc_feedback and svc_capture), ' +
    'the injection for the task (blocks DIRECTIVES, CONSTRAINTS, ALSO CONSIDER, ready to read in field text) and the scopes this session may write. ' +
    "Scope and domain default to the project's (.svc.yaml).",
  input: z.strictObject({
    task: z
      .string()
      .trim()
      .max(f.TASK_MAX, { error: `must be at most ${f.TASK_MAX} characters` })
      .optional()
      .describe('The task, in a sentence; drives the injection. Without it only pinned engrams are injected.'),
    agent: agentField().optional(),
    scope: f.scope('Scope of the session; its learnings default to it.').optional(),
    domain: f.domain('Domain of the session; its learnings default to it.').optional(),
    budget: z
      .int({ error: 'must be a whole number' })
      .min(MIN_INJECT_BUDGET, { error: `must be at least ${MIN_INJECT_BUDGET} tokens` })
      .max(MAX_INJECT_BUDGET, { error: `must be at most ${MAX_INJECT_BUDGET} tokens` })
      .default(DEFAULT_INJECT_BUDGET)
      .describe(`Token budget of the injection (default ${DEFAULT_INJECT_BUDGET}).`),
    fast: f.fast(),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { task, agent, scope, domain, budget, fast }) {
    // Team writes queued in the outbox go to the hub first (svc mcp on a developer's machine).
    let outbox: Record<string, unknown> | null = null;
    if (ctx.remote && ctx.local) {
      const { sendPending } = await import('../remote/team-writes.js');
      outbox = await sendPending(ctx.local.root, ctx.remote).then(
        (r) => (r ? { ...r } : null),
        (err: Error) => ({ error: err.message }),
      );
    }
    const started = await startSession(
      ctx.backend,
      {
        task,
        agent: agent ?? ctx.agent,
        scope: scope ?? ctx.project?.scope,
        domain: domain ?? ctx.project?.domain,
        budget,
        fast,
        embedder: fast ? undefined : await ctx.embedder.load(),
        reranker: ctx.reranker,
        ...(await teamOf(ctx)),
      },
      opContext(ctx),
    );
    return outbox ? { ...started, outbox } : started;
  },
});

export const sessionEndTool = defineTool({
  name: 'svc_session_end',
  title: 'End session',
  description:
    "End a session with a summary of what happened and the learnings it produced (each like svc_learn's arguments; scope and domain default to the session's). " +
    "Returns the ended session, what was learned, and suggested learnings: statements from the summary and the session's corrections that look worth keeping and are not known yet (learn them with svc_learn if they are right).",
  input: z.strictObject({
    session: f.session().describe('The session id from svc_session_start.'),
    summary: z
      .string()
      .trim()
      .max(4000, { error: 'must be at most 4000 characters' })
      .optional()
      .describe('What was done and learned, in a few sentences.'),
    learnings: z
      .array(f.learnItem)
      .max(50, { error: 'must hold at most 50 items' })
      .optional()
      .describe("Statements to learn now, each like svc_learn's arguments."),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { session, summary, learnings }) {
    const items = (learnings ?? []).map((l) => ({
      ...l,
      knowledge_anchors: l.knowledge_anchors as KnowledgeAnchor[] | undefined,
      dual_coding: l.dual_coding as DualCoding | undefined,
    }));
    const r = await endSession(ctx.backend, session, { summary, learnings: items }, opContext(ctx), { embedder: ctx.embedder.peek() });
    return { session: r.session, learned: r.learned.map(learnSummary), suggested: r.suggested };
  },
});

export const sessionScopeTool = defineTool({
  name: 'svc_session_scope',
  title: 'Session scope',
  description:
    'Read a session, or move it to another scope and/or domain: later learnings of the session default to them. Without scope and domain it only reads.',
  input: z.strictObject({
    session: f.session().describe('The session id.'),
    scope: f.scope('New scope for the session.').optional(),
    domain: f.domain('New domain for the session.').optional(),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { session, scope, domain }) {
    return { session: await sessionScope(ctx.backend, session, { scope, domain }) };
  },
});

export const captureTool = defineTool({
  name: 'svc_capture',
  title: 'Capture episode',
  description:
    'Record an episode on the timeline: what happened, when, by which agent (e.g. "Fixed the flaky login test by waiting for the token refresh"). ' +
    'Episodes are history, not rules: to remember a rule use svc_learn, or turn an episode into one with svc_episode_to_engram.',
  input: z.strictObject({
    summary: z
      .string()
      .trim()
      .min(1, { error: 'must not be empty' })
      .max(4000, { error: 'must be at most 4000 characters' })
      .describe('What happened, in a sentence or a few.'),
    agent: agentField().optional(),
    channel: shortName().optional().describe('Where it happened, e.g. chat, terminal, review, correction.'),
    session: f.session().optional(),
    engram_ids: z.array(f.engramId()).max(100, { error: 'must name at most 100 engrams' }).optional().describe('Engrams involved.'),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { summary, agent, channel, session, engram_ids }) {
    return {
      episode: await capture(
        ctx.backend,
        { summary, agent: agent ?? ctx.agent ?? 'mcp', channel, session, engram_ids },
        opContext(ctx, session),
      ),
    };
  },
});

export const timelineTool = defineTool({
  name: 'svc_timeline',
  title: 'Timeline',
  description:
    'Episode history, newest first (best match first with a query): full-text query over summaries, filtered by time range, agent, channel and session.',
  input: z.strictObject({
    query: f.optionalText('Words to look for in episode summaries.', f.QUERY_MAX),
    from: f.isoDate('Only episodes at or after this date or ISO 8601 timestamp.').optional(),
    to: f.isoDate('Only episodes at or before this date or ISO 8601 timestamp.').optional(),
    agent: agentField().optional().describe('Only episodes of this agent.'),
    channel: shortName().optional().describe('Only episodes of this channel.'),
    session: f.session().optional().describe('Only episodes of this session.'),
    limit: f.limit(DEFAULT_TIMELINE_LIMIT, 500, 'episodes'),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, args) {
    const episodes = await timeline(ctx.backend, args);
    return { count: episodes.length, episodes };
  },
});

export const episodeToEngramTool = defineTool({
  name: 'svc_episode_to_engram',
  title: 'Episode to engram',
  description:
    "Turn an episode into an engram: learns the given statement (distilled from the episode), or the episode's summary as is, linked to the episode and attributed to it.",
  input: z.strictObject({
    episode_id: f.text('The episode id (EP-...), from svc_timeline or svc_capture.'),
    statement: f.text('The rule or fact distilled from the episode (default: the episode summary).').optional(),
    type: f.engramType().optional(),
    scope: f.scope().optional(),
    domain: f.domain().optional(),
    tags: f.tags().optional(),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { episode_id, scope, domain, ...rest }) {
    const result = await episodeToEngram(
      ctx.backend,
      episode_id,
      { ...rest, scope: scope ?? ctx.project?.scope, domain: domain ?? ctx.project?.domain },
      opContext(ctx),
      { embedder: ctx.embedder.peek() },
    );
    return learnSummary(result);
  },
});

export const historyTool = defineTool({
  name: 'svc_history',
  title: 'History',
  description:
    "An engram's change events, oldest first: created, deduplicated, updated, feedback, pinned, promoted, decayed, retired, with when, in which session and what changed.",
  input: z.strictObject({ id: f.engramId('The engram.') }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { id }) {
    const events = await history(ctx.backend, id);
    return { id, count: events.length, events };
  },
});

export const receiptTool = defineTool({
  name: 'svc_receipt',
  title: 'Injection receipts',
  description:
    'What was injected, when, for which task, and whether each injected engram was then used: the first feedback it got afterwards (positive, negative, neutral) or null. Newest first; filter by session or engram.',
  input: z.strictObject({
    session: f.session().optional().describe('Only injections of this session.'),
    engram_id: f.engramId('Only injections that included this engram.').optional(),
    limit: f.limit(20, 200, 'receipts'),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { session, engram_id, limit }) {
    const list = await receipts(ctx.backend, { session, engram_id, limit });
    return { count: list.length, receipts: list };
  },
});

export const SESSION_TOOLS: AnyToolDef[] = [
  sessionStartTool,
  sessionEndTool,
  sessionScopeTool,
  captureTool,
  timelineTool,
  episodeToEngramTool,
];
export const RECORD_TOOLS: AnyToolDef[] = [historyTool, receiptTool];
