import type Router from '@koa/router';
import type { HubState } from '../contracts.js';
import { recall } from '../../engine/ops/recall.js';
import { inject } from '../../engine/ops/inject.js';
import { recallHitJson } from '../../engine/ops/result-json.js';
import { openOrgBackend } from '../org-backend/pg-backend.js';
import { validBody } from '../openapi/spec.js';
import type { Ctx } from '../http/route-kit.js';

// Recall (hybrid, or BM25 only) and injection, over the engrams the caller may read.

interface RecallBody {
  query: string;
  limit: number;
}

interface InjectBody {
  task: string;
  scope?: string;
  max_engrams?: number;
  budget?: number;
  protocol: boolean;
}

export function registerSearchRoutes(router: Router<HubState>): void {
  const recallRoute = (fast: boolean) => async (ctx: Ctx) => {
    const body = await validBody<RecallBody>('RecallRequest', ctx.request.body);
    const embedder = fast ? undefined : await ctx.state.embedder.load();
    const r = await recall(ctx.state.backend, body.query, { limit: body.limit, fast, embedder, reranker: ctx.state.reranker });
    ctx.body = { query: body.query, legs: r.legs, ...(r.reranker ? { reranker: r.reranker } : {}), results: r.hits.map(recallHitJson) };
  };
  router.post('/recall', recallRoute(false));
  router.post('/recall/bm25', recallRoute(true));

  router.post('/inject', async (ctx: Ctx) => {
    const body = await validBody<InjectBody>('InjectRequest', ctx.request.body);
    let backend = ctx.state.backend;
    if (body.scope) {
      // One scope: the same backend, narrowed to it.
      ctx.state.policy.requireRead(body.scope);
      backend = openOrgBackend(ctx.state.db, ctx.state.principal.org, ctx.state.policy.narrowedTo([body.scope]));
    }
    const embedder = await ctx.state.embedder.load();
    const r = await inject(backend, body.task, {
      budget: body.budget,
      maxEngrams: body.max_engrams,
      withProtocol: body.protocol,
      embedder,
      reranker: ctx.state.reranker,
    });
    ctx.body = r;
  });
}
