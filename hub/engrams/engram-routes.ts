import type Router from '@koa/router';
import type { HubState } from '../contracts.js';
import type { EngramDoc } from '../../engine/model/engram-types.js';
import { ENGRAM_STATUSES, ENGRAM_TYPES } from '../../engine/model/engram-types.js';
import { learn, type LearnInput } from '../../engine/ops/learn.js';
import { editEngram, type EngramEdit } from '../../engine/ops/edit.js';
import { forget } from '../../engine/ops/forget.js';
import { feedback, type FeedbackSignal } from '../../engine/ops/feedback.js';
import { promote } from '../../engine/ops/promote.js';
import { pin } from '../../engine/ops/pin.js';
import { validBody } from '../openapi/spec.js';
import { badRequest, notFoundProblem } from '../http/problem.js';
import {
  decodeSeqCursor,
  encodeCursor,
  opContext,
  pageLimit,
  queryText,
  requireAdmin,
  requireEditor,
  requireReadable,
  requireWritable,
  type Ctx,
} from '../http/route-kit.js';

const isOneOf = (list: readonly string[], value: string): boolean => list.includes(value);

// /api/v1/engrams: list, learn, read, update, retire, feedback, promote, pin. Every write goes
// through the engine's operations on the organization's backend; a hidden engram is a 404
// exactly like a missing one; writing needs the engram's scope in the caller's writable set.

/** The learn fields a client may send (the OpenAPI CreateEngram schema checks them first). */
type CreateBody = Pick<
  LearnInput,
  'statement' | 'type' | 'scope' | 'domain' | 'tags' | 'rationale' | 'source' | 'visibility' | 'status' | 'supersedes'
>;

async function visibleEngram(ctx: Ctx, id: string): Promise<EngramDoc> {
  const e = await ctx.state.backend.get(id);
  if (!e) throw notFoundProblem(`no engram ${id}`);
  ctx.state.auditResource = `engram:${id}`;
  return e;
}

export function registerEngramRoutes(router: Router<HubState>): void {
  router.get('/engrams', async (ctx: Ctx) => {
    const limit = pageLimit(ctx);
    const after = decodeSeqCursor(ctx);
    const scope = queryText(ctx, 'scope');
    if (scope) requireReadable(ctx.state.principal, scope);
    const status = queryText(ctx, 'status');
    if (status && !isOneOf(ENGRAM_STATUSES, status))
      throw badRequest(`status must be one of ${ENGRAM_STATUSES.join(', ')} (got "${status}")`, ['status: unknown']);
    const type = queryText(ctx, 'type');
    if (type && !isOneOf(ENGRAM_TYPES, type))
      throw badRequest(`type must be one of ${ENGRAM_TYPES.join(', ')} (got "${type}")`, ['type: unknown']);
    const hash = queryText(ctx, 'content_hash');
    if (hash && !/^sha256:[0-9a-f]{64}$/.test(hash))
      throw badRequest(`content_hash must be sha256: and 64 lowercase hex digits (got "${hash.slice(0, 80)}")`, ['content_hash: invalid']);
    const page = await ctx.state.backend.page({ scope, status, type, domain: queryText(ctx, 'domain'), content_hash: hash }, after, limit);
    ctx.body = { items: page.items, next_cursor: page.next === null ? null : encodeCursor(page.next) };
  });

  router.post('/engrams', async (ctx: Ctx) => {
    const body = await validBody<CreateBody>('CreateEngram', ctx.request.body);
    const p = ctx.state.principal;
    const scope = body.scope ?? `user:${p.userName}`;
    requireWritable(p, scope);
    const r = await learn(ctx.state.backend, { ...body, scope }, opContext());
    ctx.state.auditResource = `engram:${r.engram.id}`;
    ctx.state.auditDetails = { learn: r.action };
    ctx.set('SVC-Learn-Action', r.action);
    ctx.status = r.action === 'deduplicated' ? 200 : 201;
    ctx.body = r.engram;
  });

  router.get('/engrams/:id', async (ctx: Ctx) => {
    ctx.body = await visibleEngram(ctx, ctx.params.id!);
  });

  // Its change events, newest first: created, edited, retired, pinned...
  router.get('/engrams/:id/history', async (ctx: Ctx) => {
    const e = await visibleEngram(ctx, ctx.params.id!);
    // The backend answers the newest `limit` in the order they happened.
    ctx.body = { items: (await ctx.state.backend.listEvents({ engram_id: e.id, limit: pageLimit(ctx) })).reverse() };
  });

  router.patch('/engrams/:id', async (ctx: Ctx) => {
    const body = await validBody<EngramEdit>('PatchEngram', ctx.request.body);
    const p = ctx.state.principal;
    const id = ctx.params.id!;
    await visibleEngram(ctx, id);
    ctx.body = await editEngram(ctx.state.backend, id, body, opContext(), {
      authorize: (before, after) => {
        requireWritable(p, before.scope);
        if (after.scope !== before.scope) requireWritable(p, after.scope);
      },
    });
  });

  router.delete('/engrams/:id', async (ctx: Ctx) => {
    const e = await visibleEngram(ctx, ctx.params.id!);
    requireWritable(ctx.state.principal, e.scope);
    await forget(ctx.state.backend, { target: e.id, reason: `retired through the hub by ${ctx.state.principal.userName}` }, opContext());
    ctx.body = await ctx.state.backend.get(e.id);
  });

  router.post('/engrams/:id/feedback', async (ctx: Ctx) => {
    const body = await validBody<{ signal: FeedbackSignal }>('Feedback', ctx.request.body);
    const e = await visibleEngram(ctx, ctx.params.id!);
    // Feedback is a reader's verdict: any caller who can read the engram may give it, except a
    // viewer, who changes nothing.
    requireEditor(ctx.state.principal);
    const [after] = await feedback(ctx.state.backend, [{ id: e.id, signal: body.signal }], opContext());
    ctx.state.auditDetails = { signal: body.signal };
    ctx.body = after;
  });

  router.post('/engrams/:id/promote', async (ctx: Ctx) => {
    await validBody('Empty', ctx.request.body ?? {});
    const e = await visibleEngram(ctx, ctx.params.id!);
    requireWritable(ctx.state.principal, e.scope);
    ctx.body = await promote(ctx.state.backend, e.id, opContext());
  });

  router.post('/engrams/:id/pin', async (ctx: Ctx) => {
    const body = await validBody<{ pinned: boolean }>('Pin', ctx.request.body ?? {});
    const e = await visibleEngram(ctx, ctx.params.id!);
    requireAdmin(ctx.state.principal);
    ctx.state.auditDetails = { pinned: body.pinned };
    ctx.body = await pin(ctx.state.backend, e.id, body.pinned, opContext());
  });
}
