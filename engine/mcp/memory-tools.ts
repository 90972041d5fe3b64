import { dirname } from 'node:path';
import { z } from './sdk-deps.js';
import { SvcError } from '../errors.js';
import type { DualCoding, KnowledgeAnchor } from '../model/engram-types.js';
import { learn, type LearnResult } from '../ops/learn.js';
import { DEFAULT_RECALL_LIMIT, recall } from '../ops/recall.js';
import { inject } from '../ops/inject.js';
import { DEFAULT_INJECT_BUDGET, MAX_INJECT_BUDGET, MIN_INJECT_BUDGET } from '../ops/inject-budget.js';
import { recordInjection } from '../ops/history.js';
import { feedback } from '../ops/feedback.js';
import { forget } from '../ops/forget.js';
import { promote } from '../ops/promote.js';
import { pin } from '../ops/pin.js';
import { similaritySearch } from '../ops/similarity.js';
import { batchDecay } from '../ops/decay.js';
import * as f from './fields.js';
import { engramSummary, learnSummary, recallHitJson } from '../ops/result-json.js';
import { defineTool, type AnyToolDef, type ToolContext } from './types.js';
import { opContext, teamOf } from './tool-helpers.js';

// The memory tools (learn, recall, inject, feedback, forget, promote, pin, similarity, list)
// and maintenance (batch decay), over the engine's operations. Health (status, doctor) is in
// status-tools.ts; the helpers every tool family shares are in tool-helpers.ts.

/** Learns one item: scope and domain default to the session's, then the project's. */
export async function learnWith(
  ctx: ToolContext,
  args: f.LearnArgs,
  defaults: { scope?: string; domain?: string },
  sessionId?: string,
): Promise<LearnResult> {
  return learn(
    ctx.backend,
    {
      ...args,
      scope: args.scope ?? defaults.scope ?? ctx.project?.scope,
      domain: args.domain ?? defaults.domain ?? ctx.project?.domain,
      knowledge_anchors: args.knowledge_anchors as KnowledgeAnchor[] | undefined,
      dual_coding: args.dual_coding as DualCoding | undefined,
    },
    opContext(ctx, sessionId),
    // Learn never waits for a model load: it uses vectors only once a search has loaded them.
    { embedder: ctx.embedder.peek() },
  );
}

/** The scope and domain a session gives its learnings; a stale session id is a warning, not a lost learning. */
async function sessionDefaults(
  ctx: ToolContext,
  sessionId: string | undefined,
  warnings: string[],
): Promise<{ scope?: string; domain?: string }> {
  if (!sessionId) return {};
  const session = await ctx.backend.getSession(sessionId);
  if (!session) {
    warnings.push(`no session ${sessionId}: learned with the project's defaults`);
    return {};
  }
  return { scope: session.scope, domain: session.domain };
}

const denseLeg = async (ctx: ToolContext, fast: boolean) => (fast ? undefined : ctx.embedder.load());

/** Whether the project opted in to routing learns without a scope to the hub's team scopes (.svc.yaml route_to_team). */
async function routesToTeam(ctx: ToolContext): Promise<boolean> {
  if (!ctx.projectPath) return false;
  const { loadProjectConfig } = await import('../config/project-config.js');
  return (await loadProjectConfig(dirname(ctx.projectPath)))?.route_to_team === true;
}

/** A learn aimed at a team scope goes to the hub through the outbox (secrets never do: learn demotes them). */
async function learnOnHubIfTeam(
  ctx: ToolContext,
  item: { statement: string; scope?: string; rationale?: string } & Record<string, unknown>,
  scope: string | undefined,
): Promise<Record<string, unknown> | null> {
  if (!ctx.remote || !ctx.local || !scope) return null;
  const r = await (await import('../remote/team-learn.js')).learnOnHubIfTeam(ctx.local.root, ctx.remote, { ...item, scope });
  if (!r) return null;
  if (r.outcome === 'queued')
    return {
      queued: true,
      hub: ctx.remote.url,
      scope,
      outbox_key: r.entry.key,
      warnings: [
        `${r.error}; queued in the outbox: svc_recall and svc_list show it (source outbox) until the hub has it; the next call the hub answers, or svc_outbox retry: true, sends it`,
      ],
    };
  const e = r.engram as Record<string, unknown>;
  return { id: e.id, statement: e.statement, type: e.type, scope: e.scope, status: e.status, hub: ctx.remote.url, warnings: [] };
}

export const learnTool = defineTool({
  name: 'svc_learn',
  title: 'Learn',
  description:
    'Save one learned statement (an engram) to memory: a correction from the user, a project convention, a decision. ' +
    'Returns its id, type, resolved scope and whether it was new ("created"), already known ("deduplicated", reference count bumped) or revived ("reactivated"). ' +
    'To correct an earlier engram, pass its id in supersedes. Secrets aimed at a shared scope are stored in scope "local" with a warning.',
  input: z.strictObject({ ...f.learnFields, session: f.session().optional() }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { session, ...item }) {
    const warnings: string[] = [];
    const defaults = await sessionDefaults(ctx, session, warnings);
    const given = item.scope ?? defaults.scope ?? ctx.project?.scope;
    // Where it goes: engine/remote/team-learn.ts, shared with `svc learn`.
    const { scope, routed, suggested } =
      given === undefined
        ? await (
            await import('../remote/team-learn.js')
          ).routeLearn(ctx.backend, item.statement, {
            ...(item.domain ? { domain: item.domain } : {}),
            ...(await teamOf(ctx)),
            ...(ctx.local ? { storeRoot: ctx.local.root } : {}),
            remote: ctx.remote,
            routeToTeam: await routesToTeam(ctx),
          })
        : { scope: given, routed: undefined, suggested: undefined };
    const onHub = await learnOnHubIfTeam(ctx, item, scope);
    if (onHub) return { ...onHub, ...(routed ? { routed } : {}) };
    const result = await learnWith(ctx, { ...item, ...(scope ? { scope } : {}) }, defaults, session);
    result.warnings.unshift(...warnings);
    if (suggested)
      result.warnings.push(
        (await import('../ops/suggest-scope.js'))
          .suggestionLine(result.engram.id, suggested)
          .replace('svc rescope', 'svc_rescope (or svc rescope)'),
      );
    return { ...learnSummary(result), ...(routed ? { routed } : {}), ...(suggested ? { suggested } : {}) };
  },
});

export const learnBatchTool = defineTool({
  name: 'svc_learn_batch',
  title: 'Learn several',
  description:
    'Save several statements at once (at most 100), each with the same fields as svc_learn. Items are learned in order; ' +
    "one item failing does not stop the others: each result is either the learned engram or that item's error.",
  input: z.strictObject({
    items: z
      .array(f.learnItem)
      .min(1, { error: 'must hold at least one item' })
      .max(100, { error: 'must hold at most 100 items' })
      .describe("The statements to learn, each an object like svc_learn's arguments (statement required)."),
    session: f.session().optional(),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { items, session }) {
    const warnings: string[] = [];
    const defaults = await sessionDefaults(ctx, session, warnings);
    const results: Array<Record<string, unknown>> = [];
    for (const [index, item] of items.entries()) {
      try {
        results.push({ index, ...learnSummary(await learnWith(ctx, item, defaults, session)) });
      } catch (error) {
        if (!(error instanceof SvcError)) throw error;
        results.push({ index, error: error.details.length ? `${error.message}: ${error.details.join('; ')}` : error.message });
      }
    }
    const failed = results.filter((r) => 'error' in r).length;
    return { learned: results.length - failed, failed, results, warnings };
  },
});

export const recallTool = defineTool({
  name: 'svc_recall',
  title: 'Recall',
  description:
    'Search memory for engrams relevant to a query: hybrid BM25 + embedding search fused by reciprocal rank fusion, then shaped by feedback, decay and pinning. ' +
    'Retired engrams never appear; candidates are marked. legs tells which rankings ran (the vector leg says why when it could not). ' +
    'No match is an empty result, not an error. The first hybrid call may download the embedding model; fast: true skips it.',
  input: z.strictObject({
    query: f.text('What to look for, in words or keywords.', f.QUERY_MAX),
    limit: f.limit(DEFAULT_RECALL_LIMIT, 100),
    fast: f.fast(),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { query, limit, fast }) {
    const result = await recall(ctx.backend, query, {
      limit,
      fast,
      embedder: await denseLeg(ctx, fast),
      reranker: ctx.reranker,
      now: ctx.now(),
      ...(await teamOf(ctx)),
    });
    return {
      query,
      legs: result.legs,
      ...(result.reranker ? { reranker: result.reranker } : {}),
      ...(result.sources ? { sources: result.sources } : {}),
      count: result.hits.length,
      results: result.hits.map(recallHitJson),
    };
  },
});

export const injectTool = defineTool({
  name: 'svc_inject',
  title: 'Inject',
  description:
    'What to know before working on a task: a budget-aware selection of engrams as blocks DIRECTIVES, CONSTRAINTS (prohibitions) and ALSO CONSIDER, ' +
    'ready to paste into context (field text), followed by the Learning Protocol unless with_protocol is false. Pinned engrams always qualify. ' +
    'The injection is recorded so svc_receipt can later tell whether it was used.',
  input: z.strictObject({
    task: f.text('The task about to be worked on, in a sentence.'),
    budget: z
      .int({ error: 'must be a whole number' })
      .min(MIN_INJECT_BUDGET, { error: `must be at least ${MIN_INJECT_BUDGET} tokens` })
      .max(MAX_INJECT_BUDGET, { error: `must be at most ${MAX_INJECT_BUDGET} tokens` })
      .default(DEFAULT_INJECT_BUDGET)
      .describe(`Token budget of the text (default ${DEFAULT_INJECT_BUDGET}).`),
    with_protocol: z.boolean().default(true).describe('Append the Learning Protocol block (default true).'),
    fast: f.fast(),
    session: f.session().optional(),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { task, budget, with_protocol, fast, session }) {
    const now = ctx.now();
    const result = await inject(ctx.backend, task, {
      budget,
      withProtocol: with_protocol,
      fast,
      embedder: await denseLeg(ctx, fast),
      reranker: ctx.reranker,
      now,
      ...(await teamOf(ctx)),
    });
    await recordInjection(ctx.backend, result, { session, agent: ctx.agent, at: now });
    return result;
  },
});

export const feedbackTool = defineTool({
  name: 'svc_feedback',
  title: 'Feedback',
  description:
    'Tell memory whether engrams helped: positive strengthens future recall, negative weakens it, neutral only records use. ' +
    'Give id and signal for one engram, or items for several (all apply or none do). Send it after a task for the engrams that were injected.',
  input: z
    .strictObject({
      id: f.engramId('The engram to rate.').optional(),
      signal: f.signal().optional(),
      items: z
        .array(z.strictObject({ id: f.engramId(), signal: f.signal() }))
        .min(1, { error: 'must hold at least one item' })
        .max(200, { error: 'must hold at most 200 items' })
        .optional()
        .describe('Several ratings at once: [{"id": "ENG-...", "signal": "positive"}, ...].'),
      session: f.session().optional(),
    })
    .superRefine((v, issue) => {
      if (v.items !== undefined && (v.id !== undefined || v.signal !== undefined)) {
        issue.addIssue({ code: 'custom', path: ['items'], message: 'give either id and signal, or items, not both' });
      } else if (v.items === undefined) {
        if (v.id === undefined) issue.addIssue({ code: 'custom', path: ['id'], message: 'is required (or give items)' });
        if (v.signal === undefined)
          issue.addIssue({ code: 'custom', path: ['signal'], message: 'is required: one of "positive", "negative", "neutral"' });
      }
    }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { id, signal, items, session }) {
    const list = items ?? [{ id: id!, signal: signal! }];
    const updated = await feedback(ctx.backend, list, opContext(ctx, session));
    return { recorded: list.length, engrams: updated.map((e) => ({ id: e.id, feedback_signals: e.feedback_signals })) };
  },
});

export const forgetTool = defineTool({
  name: 'svc_forget',
  title: 'Forget',
  description:
    'Retire an engram (soft delete: it stops being recalled or injected; its file and history stay for audit). ' +
    'An id (ENG-, ABS-, META-) is retired directly. Other text is searched: exactly one match is retired; several matches are returned (action "ambiguous") and nothing is retired, so call again with one id.',
  input: z.strictObject({
    target: f.text('An engram id, or text that identifies the engram.'),
    search: z.boolean().default(false).describe('Search the text even if it looks like an id.'),
    reason: z.string().trim().min(1, { error: 'must not be empty' }).optional().describe('Why, kept with the engram for audit.'),
    session: f.session().optional(),
  }),
  destructive: true,
  readOnly: false,
  async handler(ctx, { target, search, reason, session }) {
    const r = await forget(ctx.backend, { target, search, reason }, opContext(ctx, session));
    if (r.action === 'ambiguous') {
      return {
        action: r.action,
        message: `${r.matches.length} engrams match "${target}"; nothing was retired: call svc_forget with one id`,
        matches: r.matches.map(engramSummary),
      };
    }
    return { action: r.action, id: r.engram.id, status: r.engram.status, statement: r.engram.statement };
  },
});

export const promoteTool = defineTool({
  name: 'svc_promote',
  title: 'Promote',
  description:
    'Move a candidate engram to active, with its activation reset so it is injected again. One id at a time; retired engrams cannot be promoted.',
  input: z.strictObject({ id: f.engramId('The candidate engram.') }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { id }) {
    const e = await promote(ctx.backend, id, opContext(ctx));
    return { id: e.id, status: e.status, activation: e.activation };
  },
});

export const pinTool = defineTool({
  name: 'svc_pin',
  title: 'Pin',
  description:
    'Pin an engram so it is loaded into every injection (no relevance gate), or unpin it with pinned: false. Pinning a dormant engram wakes it. Retired engrams cannot be pinned.',
  input: z.strictObject({
    id: f.engramId('The engram to pin or unpin.'),
    pinned: z.boolean().default(true).describe('true to pin (default), false to unpin.'),
  }),
  destructive: false,
  readOnly: false,
  async handler(ctx, { id, pinned }) {
    const e = await pin(ctx.backend, id, pinned, opContext(ctx));
    return { id: e.id, pinned: e.pinned === true, status: e.status };
  },
});

export const similarityTool = defineTool({
  name: 'svc_similarity_search',
  title: 'Similarity search',
  description:
    'Raw embedding cosine of a text against stored engrams, nearest first, each read as duplicate (above 0.9), related (0.7 to 0.9) or new (below 0.7). ' +
    'Use it before learning to avoid duplicates. Needs the embedding model (downloaded on first use).',
  input: z.strictObject({
    query: f.text('The text to compare, e.g. a statement you are about to learn.'),
    limit: f.limit(DEFAULT_RECALL_LIMIT, 100),
    scope: f.scope('Only engrams of this scope.').optional(),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { query, limit, scope }) {
    const state = await ctx.embedder.load();
    if (state.state !== 'ready') throw new SvcError('storage', `similarity search needs the embedding model: ${state.reason}`);
    const hits = await similaritySearch(ctx.backend, state.embedder, query, { limit, scope });
    return {
      query,
      model: state.model,
      count: hits.length,
      results: hits.map((h) => ({ ...engramSummary(h.engram), cosine: h.cosine, reading: h.reading })),
    };
  },
});

export const listTool = defineTool({
  name: 'svc_list',
  title: 'List',
  description:
    'Inventory of engrams, filtered by scope, domain (and its sub-domains), type and status (default: all but retired). Read-only.',
  input: z.strictObject({
    scope: f.scope('Only this scope.').optional(),
    domain: f.domain('Only this domain and its sub-domains.').optional(),
    type: f.engramType().optional(),
    status: f.engramStatus().optional(),
    meta: z.boolean().default(false).describe('Only META- engrams.'),
    limit: f.limit(100, 10_000, 'engrams'),
  }),
  destructive: false,
  readOnly: true,
  async handler(ctx, { scope, domain, type, status, meta, limit }) {
    const filter = { scope, domain, type, status, idPrefix: meta ? 'META-' : undefined };
    if (!ctx.remote || !ctx.local || meta) {
      const engrams = await ctx.backend.list({ ...filter, limit });
      return { count: engrams.length, engrams: engrams.map(engramSummary) };
    }
    // A project with a hub: its engrams too, as svc list shows them.
    const { listWithHub, incompleteLine } = await import('../remote/team-list.js');
    const { rows, hub } = await listWithHub(ctx.backend, ctx.remote, filter, limit, ctx.local.root);
    return {
      count: rows.length,
      engrams: rows.map((r) => ({ ...engramSummary(r.doc), source: r.source })),
      sources: { local: 'ok', hub: hub!.state },
      complete: hub!.complete,
      ...(hub!.complete ? {} : { warnings: [incompleteLine(hub!, limit)] }),
    };
  },
});

export const batchDecayTool = defineTool({
  name: 'svc_batch_decay',
  title: 'Batch decay',
  description:
    'Apply ACT-R decay to every local engram: retrieval strength falls with the days since last use, and active engrams that fall below 0.2 turn dormant. ' +
    'Pinned and retired engrams and those used in the last day are skipped. Reports processed, decayed and skipped counts and the status transitions.',
  input: z.strictObject({
    context_scope: f.scope('Leave this scope (the project being worked on) untouched.').optional(),
  }),
  machineLocal: 'decays a local store',
  destructive: false,
  readOnly: false,
  async handler(ctx, { context_scope }) {
    return batchDecay(ctx.backend, { contextScope: context_scope }, opContext(ctx));
  },
});

export const MEMORY_TOOLS: AnyToolDef[] = [
  learnTool,
  learnBatchTool,
  recallTool,
  injectTool,
  feedbackTool,
  forgetTool,
  promoteTool,
  pinTool,
  similarityTool,
  listTool,
];
