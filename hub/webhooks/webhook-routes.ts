import type Router from '@koa/router';
import { randomBytes } from 'node:crypto';
import type { Database, HubState, Org, Queryable } from '../contracts.js';
import { ident, isoOrNull as iso } from '../data/sql.js';
import { checkUrl, RefusedUrl, UpstreamFailed, type OutboundPolicy } from '../net/outbound.js';
import { validBody } from '../openapi/spec.js';
import { badRequest, notFoundProblem } from '../http/problem.js';
import { requireAdmin, type Ctx } from '../http/route-kit.js';
import { attempt, RECEIVER_ANSWER_BYTES, type WebhookSettings } from './delivery-worker.js';
import { eventBody, TEST_EVENT, type WebhookEvent } from './webhook-outbox.js';
import { newWebhookSecret } from './signature.js';
import { PLAIN_BOX } from '../data/secret-box.js';

// Webhooks under /api/v1/admin/webhooks, for admins: register (the secret is answered once, and
// stored sealed under SVC_HUB_SECRET_KEY when it is set),
// list, read one with its recent deliveries, change its URL or events, disable or re-enable it,
// remove it, and send it a test event. Re-enabling sends what was waiting when it was disabled,
// from a fresh count of attempts.

export interface WebhookRouteDeps {
  /** The test route reads and sends outside the request's transaction (PGlite would wait on it). */
  db: Database;
  outbound: OutboundPolicy;
  settings: WebhookSettings;
}

interface WebhookRow {
  id: string;
  url: string;
  events: string[];
  state: 'active' | 'disabled';
  disabled_reason: string | null;
  created_by: string;
  created_at: Date | string;
  last_success_at: Date | string | null;
  pending: number;
}

/** A webhook as the API answers it (the admin pages read this shape too). */
export interface WebhookView extends Omit<WebhookRow, 'created_at' | 'last_success_at'> {
  created_at: string;
  last_success_at: string | null;
}

function view(w: WebhookRow): WebhookView {
  return {
    id: w.id,
    url: w.url,
    events: w.events,
    state: w.state,
    disabled_reason: w.disabled_reason,
    created_by: w.created_by,
    created_at: iso(w.created_at)!,
    last_success_at: iso(w.last_success_at),
    pending: Number(w.pending),
  };
}

const SELECT = (s: string) =>
  `SELECT w.id, w.url, w.events, w.state, w.disabled_reason, w.created_by, w.created_at, w.last_success_at,
          (SELECT count(*) FROM ${s}.webhook_deliveries d WHERE d.webhook_id = w.id AND d.delivered_at IS NULL AND d.failed_at IS NULL)::int AS pending
     FROM ${s}.webhooks w`;

async function findWebhook(q: Queryable, org: Org, id: string): Promise<WebhookRow> {
  const row = (await q.query<WebhookRow>(`${SELECT(ident(org.schema))} WHERE w.id = $1`, [id])).rows[0];
  if (!row) throw notFoundProblem(`no webhook ${id}`);
  return row;
}

/** The URL, refused with a 400 when the outbound policy would never send to it. */
async function destination(url: string, policy: OutboundPolicy): Promise<string> {
  try {
    return (await checkUrl(url, policy)).url.toString();
  } catch (err) {
    if (err instanceof RefusedUrl || err instanceof UpstreamFailed) throw badRequest(`url: ${err.message}`, [`url: ${err.message}`]);
    throw err;
  }
}

export function registerWebhookRoutes(router: Router<HubState>, deps: WebhookRouteDeps): void {
  router.get('/admin/webhooks', async (ctx: Ctx) => {
    requireAdmin(ctx.state.principal);
    const rows = await ctx.state.db.query<WebhookRow>(`${SELECT(ident(ctx.state.principal.org.schema))} ORDER BY w.created_at, w.id`);
    ctx.body = { items: rows.rows.map(view) };
  });

  router.post('/admin/webhooks', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const body = await validBody<{ url: string; events: WebhookEvent[] }>('WebhookNew', ctx.request.body);
    const url = await destination(body.url, deps.outbound);
    const id = `WH-${randomBytes(6).toString('hex')}`;
    const secret = newWebhookSecret();
    await ctx.state.db.query(
      `INSERT INTO ${ident(p.org.schema)}.webhooks (id, url, events, secret, created_by) VALUES ($1, $2, $3, $4, $5)`,
      [id, url, [...new Set(body.events)], (deps.settings.secrets ?? PLAIN_BOX).seal(secret), p.userName],
    );
    ctx.state.auditResource = `webhook:${id}`;
    ctx.state.auditDetails = { url, events: body.events };
    ctx.status = 201;
    ctx.body = { ...view(await findWebhook(ctx.state.db, p.org, id)), secret };
  });

  router.get('/admin/webhooks/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const hook = await findWebhook(ctx.state.db, p.org, ctx.params.id!);
    const deliveries = await ctx.state.db.query<Record<string, unknown>>(
      `SELECT id::text AS id, event, event_id, created_at, attempts, next_at, delivered_at, failed_at, last_status, last_error, latency_ms
         FROM ${ident(p.org.schema)}.webhook_deliveries WHERE webhook_id = $1 ORDER BY id DESC LIMIT 50`,
      [hook.id],
    );
    ctx.body = {
      ...view(hook),
      deliveries: deliveries.rows.map((d) => ({
        id: d.id,
        event: d.event,
        event_id: d.event_id,
        created_at: iso(d.created_at as Date),
        attempts: Number(d.attempts),
        state: d.delivered_at ? 'delivered' : d.failed_at ? 'failed' : 'pending',
        next_at: d.delivered_at || d.failed_at ? null : iso(d.next_at as Date),
        delivered_at: iso(d.delivered_at as Date | null),
        status: d.last_status === null ? null : Number(d.last_status),
        latency_ms: d.latency_ms === null ? null : Number(d.latency_ms),
        error: d.last_error,
      })),
    };
  });

  router.patch('/admin/webhooks/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const body = await validBody<{ url?: string; events?: WebhookEvent[]; state?: 'active' | 'disabled' }>(
      'WebhookChange',
      ctx.request.body,
    );
    const s = ident(p.org.schema);
    const newUrl = body.url === undefined ? undefined : await destination(body.url, deps.outbound);
    const hook = await findWebhook(ctx.state.db, p.org, ctx.params.id!);
    const url = newUrl ?? hook.url;
    const events = body.events === undefined ? hook.events : [...new Set(body.events)];
    const state = body.state ?? hook.state;
    const reason = state === 'disabled' ? (hook.state === 'disabled' ? hook.disabled_reason : `disabled by ${p.userName}`) : null;
    await ctx.state.db.query(`UPDATE ${s}.webhooks SET url = $2, events = $3, state = $4, disabled_reason = $5 WHERE id = $1`, [
      hook.id,
      url,
      events,
      state,
      reason,
    ]);
    if (hook.state === 'disabled' && state === 'active') {
      await ctx.state.db.query(
        `UPDATE ${s}.webhook_deliveries SET attempts = 0, next_at = now(), locked_until = NULL WHERE webhook_id = $1 AND delivered_at IS NULL AND failed_at IS NULL`,
        [hook.id],
      );
    }
    ctx.state.auditResource = `webhook:${hook.id}`;
    ctx.state.auditDetails = { ...body };
    ctx.body = view(await findWebhook(ctx.state.db, p.org, hook.id));
  });

  router.delete('/admin/webhooks/:id', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const gone = await ctx.state.db.query(`DELETE FROM ${ident(p.org.schema)}.webhooks WHERE id = $1 RETURNING id`, [ctx.params.id]);
    if (gone.rows.length === 0) throw notFoundProblem(`no webhook ${ctx.params.id}`);
    ctx.state.auditResource = `webhook:${ctx.params.id}`;
    ctx.status = 204;
  });

  // Sent now, whatever the webhook's state, and recorded among its deliveries; it does not count
  // towards disabling the webhook.
  router.post('/admin/webhooks/:id/test', async (ctx: Ctx) => {
    const p = ctx.state.principal;
    requireAdmin(p);
    const s = ident(p.org.schema);
    const hook = await findWebhook(deps.db, p.org, ctx.params.id!);
    const stored = (await deps.db.query<{ secret: string }>(`SELECT secret FROM ${s}.webhooks WHERE id = $1`, [hook.id])).rows[0]!.secret;
    const secret = (deps.settings.secrets ?? PLAIN_BOX).open(stored);
    const event = eventBody(p.org, { type: TEST_EVENT, data: { webhook_id: hook.id, sent_by: p.userName } });
    const out = await attempt(hook.url, secret, { id: event.id, type: TEST_EVENT }, event.body, new Date(), {
      ...deps.outbound,
      timeoutMs: deps.settings.timeoutMs,
      maxBytes: RECEIVER_ANSWER_BYTES,
    });
    await ctx.state.db.query(
      `INSERT INTO ${s}.webhook_deliveries (webhook_id, event_id, event, body, attempts, delivered_at, failed_at, last_status, last_error, latency_ms)
       VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8, $9)`,
      [
        hook.id,
        event.id,
        TEST_EVENT,
        event.body,
        out.ok ? new Date() : null,
        out.ok ? null : new Date(),
        out.status,
        out.error,
        out.latencyMs,
      ],
    );
    ctx.state.auditResource = `webhook:${hook.id}`;
    ctx.state.auditDetails = { delivered: out.ok, status: out.status };
    ctx.body = { event_id: event.id, delivered: out.ok, status: out.status, latency_ms: out.latencyMs, error: out.error };
  });
}
