import { randomUUID } from 'node:crypto';
import type { Org, Queryable } from '../contracts.js';
import { ident } from '../data/sql.js';

// Webhook events enter the outbox in the transaction of the change that causes them: one row per
// event and subscribed webhook (webhook_deliveries), so a crash can lose neither a committed
// change's events nor create events for a change that rolled back. A NOTIFY, delivered at
// commit, wakes the delivery workers of every hub process (delivery-worker.ts).

export const WEBHOOK_EVENTS = [
  'engram.created',
  'engram.updated',
  'engram.retired',
  'pack.installed',
  'session.ended',
  'audit.entry',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
/** What POST /admin/webhooks/{id}/test sends; no webhook subscribes to it. */
export const TEST_EVENT = 'webhook.test';

/** The channel whose payload is the schema of an organization with new deliveries. */
export const WEBHOOK_CHANNEL = 'svc_webhooks';

export interface OutboxEvent {
  type: WebhookEvent | typeof TEST_EVENT;
  data: unknown;
}

/** The body every delivery carries: its signature covers the event's id and time. */
export function eventBody(org: Org, e: OutboxEvent, id: string = randomUUID(), at: Date = new Date()): { id: string; body: string } {
  return { id, body: JSON.stringify({ id, type: e.type, created_at: at.toISOString(), organization: org.slug, data: e.data }) };
}

/**
 * The outbox part of a change's statement: a WITH item `queued` that queues the events for every
 * active webhook that wants them, and the SELECT that ends the statement (waking the delivery
 * workers when it queued any). Its parameters are appended to `params`, so a write can queue
 * its events in the same round trip as the change itself. `when`, a condition on the statement's
 * other WITH items, queues them only when it holds.
 */
export function outboxSql(org: Org, events: OutboxEvent[], params: unknown[], when?: string): { cte: string; select: string } {
  const s = ident(org.schema);
  params.push(JSON.stringify(events.map((e) => ({ ...eventBody(org, e), type: e.type }))), WEBHOOK_CHANNEL, org.schema);
  const n = params.length - 2;
  const where = when ? ` WHERE ${when}` : '';
  return {
    cte: `queued AS (
       INSERT INTO ${s}.webhook_deliveries (webhook_id, event_id, event, body)
       SELECT w.id, x.id, x.type, x.body
         FROM jsonb_to_recordset($${n}::jsonb) AS x(id text, type text, body text)
         JOIN ${s}.webhooks w ON w.state = 'active' AND x.type = ANY (w.events)${where}
       RETURNING 1)`,
    select: `SELECT c.n FROM (SELECT count(*)::int AS n FROM queued) c
       LEFT JOIN LATERAL (SELECT pg_notify($${n + 1}, $${n + 2}) WHERE c.n > 0) woken ON true`,
  };
}

/** Queues the events for every active webhook that wants them, on `q` (the change's transaction). */
export async function emitEvents(q: Queryable, org: Org, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  const params: unknown[] = [];
  const outbox = outboxSql(org, events, params);
  await q.query(`WITH ${outbox.cte} ${outbox.select}`, params);
}
