import type Router from '@koa/router';
import type { HubState } from '../contracts.js';
import { capture, timeline } from '../../engine/ops/episodes.js';
import { endSession, startSession } from '../../engine/ops/sessions.js';
import type { LearnInput } from '../../engine/ops/learn.js';
import { validBody } from '../openapi/spec.js';
import { notFoundProblem } from '../http/problem.js';
import { isoQuery, opContext, pageLimit, queryText, type Ctx } from '../http/route-kit.js';

// Episodes (the timeline) and sessions. Both belong to the user who wrote them and live in a
// scope (default that user's own), read by the same rules as engrams; `agent` is the client's
// label beside the real author. Only a session's owner ends it. A session's learnings are
// learned like POST /engrams: each needs a writable scope (default the session's). The rules are
// the policy's (hub/access/policy.ts), which the backend applies too: checked here first only to
// refuse before any work.

export function registerRecordRoutes(router: Router<HubState>): void {
  router.get('/episodes', async (ctx: Ctx) => {
    const items = await timeline(ctx.state.backend, {
      query: queryText(ctx, 'q'),
      from: isoQuery(ctx, 'from'),
      to: isoQuery(ctx, 'to'),
      agent: queryText(ctx, 'agent'),
      channel: queryText(ctx, 'channel'),
      session: queryText(ctx, 'session'),
      limit: pageLimit(ctx, 20),
    });
    ctx.body = { items, next_cursor: null };
  });

  router.post('/episodes', async (ctx: Ctx) => {
    const body = await validBody<{
      summary: string;
      agent?: string;
      channel?: string;
      session?: string;
      scope?: string;
      engram_ids?: string[];
    }>('CaptureEpisode', ctx.request.body);
    const p = ctx.state.principal;
    const scope = body.scope ?? `user:${p.userName}`;
    // The backend checks the scope, and that the session and engrams it names are the caller's to see.
    const episode = await capture(ctx.state.backend, { ...body, scope, agent: body.agent ?? p.userName }, opContext());
    ctx.state.auditResource = `episode:${episode.id}`;
    ctx.status = 201;
    ctx.body = { ...episode, owner: p.userName, scope };
  });

  router.get('/episodes/:id', async (ctx: Ctx) => {
    const e = await ctx.state.backend.getEpisode(ctx.params.id!);
    if (!e) throw notFoundProblem(`no episode ${ctx.params.id}`);
    ctx.state.auditResource = `episode:${e.id}`;
    ctx.body = e;
  });

  router.post('/sessions', async (ctx: Ctx) => {
    const body = await validBody<{ task?: string; agent?: string; scope?: string; domain?: string; budget?: number }>(
      'StartSession',
      ctx.request.body ?? {},
    );
    const p = ctx.state.principal;
    const scope = body.scope ?? `user:${p.userName}`;
    ctx.state.policy.requireWrite(scope);
    const embedder = await ctx.state.embedder.load();
    const r = await startSession(
      ctx.state.backend,
      { ...body, scope, agent: body.agent ?? p.userName, embedder, reranker: ctx.state.reranker },
      opContext(),
    );
    ctx.state.auditResource = `session:${r.session.id}`;
    ctx.status = 201;
    ctx.body = { session: { ...r.session, owner: p.userName }, injection: r.injection };
  });

  // The caller's own sessions, newest first.
  router.get('/sessions', async (ctx: Ctx) => {
    ctx.body = { items: await ctx.state.backend.sessionsOf(ctx.state.principal.userName, pageLimit(ctx, 20)), next_cursor: null };
  });

  router.get('/sessions/:id', async (ctx: Ctx) => {
    const s = await ctx.state.backend.getSession(ctx.params.id!);
    if (!s) throw notFoundProblem(`no session ${ctx.params.id}`);
    ctx.state.auditResource = `session:${s.id}`;
    ctx.body = s;
  });

  router.post('/sessions/:id/end', async (ctx: Ctx) => {
    const body = await validBody<{ summary?: string; learnings?: LearnInput[] }>('EndSession', ctx.request.body ?? {});
    const p = ctx.state.principal;
    const id = ctx.params.id!;
    const session = await ctx.state.backend.getSession(id);
    if (!session) throw notFoundProblem(`no session ${id}`);
    ctx.state.auditResource = `session:${id}`;
    ctx.state.policy.requireSessionOwner(session);
    const learnings = (body.learnings ?? []).map((l) => ({ ...l, scope: l.scope ?? session.scope ?? `user:${p.userName}` }));
    for (const l of learnings) ctx.state.policy.requireWrite(l.scope);
    const r = await endSession(ctx.state.backend, id, { summary: body.summary, learnings }, { ...opContext(), sessionId: id });
    ctx.body = { session: r.session, learned: r.learned.map((x) => x.engram), suggested: r.suggested };
  });
}
