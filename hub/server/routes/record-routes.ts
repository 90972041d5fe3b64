import type Router from '@koa/router';
import type { HubState } from '../../contracts.js';
import { capture, timeline } from '../../../engine/ops/episodes.js';
import { endSession, startSession } from '../../../engine/ops/sessions.js';
import { assertNoSecrets, type LearnInput } from '../../../engine/ops/learn.js';
import { validBody } from '../../openapi/spec.js';
import { notFoundProblem } from '../problem.js';
import { isoQuery, opContext, pageLimit, queryText, requireWritable, type Ctx } from './route-kit.js';

// Episodes (the timeline) and sessions. A session's learnings are learned like POST /engrams:
// each needs a writable scope (default the caller's own) and no secrets.

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
    const body = await validBody<{ summary: string; agent?: string; channel?: string; session?: string; engram_ids?: string[] }>('CaptureEpisode', ctx.request.body);
    const episode = await capture(ctx.state.backend, { ...body, agent: body.agent ?? ctx.state.principal.userName }, opContext());
    ctx.state.auditResource = `episode:${episode.id}`;
    ctx.status = 201;
    ctx.body = episode;
  });

  router.get('/episodes/:id', async (ctx: Ctx) => {
    const e = await ctx.state.backend.getEpisode(ctx.params.id!);
    if (!e) throw notFoundProblem(`no episode ${ctx.params.id}`);
    ctx.state.auditResource = `episode:${e.id}`;
    ctx.body = e;
  });

  router.post('/sessions', async (ctx: Ctx) => {
    const body = await validBody<{ task?: string; agent?: string; scope?: string; domain?: string; budget?: number }>('StartSession', ctx.request.body ?? {});
    const p = ctx.state.principal;
    if (body.scope) requireWritable(p, body.scope);
    const embedder = await ctx.state.embedder.load();
    const r = await startSession(ctx.state.backend, { ...body, agent: body.agent ?? p.userName, embedder }, opContext());
    ctx.state.auditResource = `session:${r.session.id}`;
    ctx.status = 201;
    ctx.body = { session: r.session, injection: r.injection };
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
    const learnings = (body.learnings ?? []).map((l) => ({ ...l, scope: l.scope ?? session.scope ?? `user:${p.userName}` }));
    for (const l of learnings) {
      requireWritable(p, l.scope);
      // Checked for the whole batch first, so a refused learning leaves nothing half-written.
      assertNoSecrets(l);
    }
    const r = await endSession(ctx.state.backend, id, { summary: body.summary, learnings }, { ...opContext(), sessionId: id });
    ctx.body = { session: r.session, learned: r.learned.map((x) => x.engram), suggested: r.suggested };
  });
}
