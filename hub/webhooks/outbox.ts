import { randomUUID } from 'node:crypto';
import type { Org, Queryable } from '../contracts.js';
import { ident } from '../data/migrate.js';

// Webhook events enter the outbox in the transaction of the change that causes them: one row per
// event and subscribed webhook (webhook_deliveries), so a crash can lose neither a committed
// change's events nor create events for a change that rolled back. A NOTIFY, delivered at
// commit, wakes the delivery workers of every hub process (delivery-worker.ts).

export const WEBHOOK_EVENTS = ['engram.created', 'engram.updated', 'engram.retired', 'pack.installed', 'session.ended', 'audit.entry'] as const;
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

/** Queues the events for every active webhook that wants them, on `q` (the change's transaction). */
export async function emitEvents(q: Queryable, org: Org, events: OutboxEvent[]): Promise<void> {
  if (events.length === 0) return;
  const s = ident(org.schema);
  const rows = events.map((e) => ({ ...eventBody(org, e), type: e.type }));
  const queued = await q.query<{ n: number }>(
    `WITH queued AS (
       INSERT INTO ${s}.webhook_deliveries (webhook_id, event_id, event, body)
       SELECT w.id, x.id, x.type, x.body
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, type text, body text)
         JOIN ${s}.webhooks w ON w.state = 'active' AND x.type = ANY (w.events)
       RETURNING 1)
     SELECT count(*)::int AS n FROM queued`,
    [JSON.stringify(rows)],
  );
  if (Number(queued.rows[0]?.n ?? 0) > 0) await q.query('SELECT pg_notify($1, $2)', [WEBHOOK_CHANNEL, org.schema]);
}
