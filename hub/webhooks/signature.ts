import { createHmac, randomBytes } from 'node:crypto';

// How a delivery proves it comes from this hub. The spec's header, X-SVC-Signature, is the
// HMAC-SHA256 of the raw body under the secret (its UTF-8 bytes); the body carries the event's id
// and time, so that signature covers them. The Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature) are sent too: they sign the id and the send time with
// the body, so a receiver using one of that standard's libraries can refuse replays by age.

const PREFIX = 'whsec_';

/** A new secret, in the Standard Webhooks form: whsec_ and 32 random bytes in base64. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

export function svcSignature(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** The headers of one delivery attempt. */
export function deliveryHeaders(secret: string, event: { id: string; type: string }, body: string, sentAt: Date): Record<string, string> {
  const timestamp = String(Math.floor(sentAt.getTime() / 1000));
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  const standard = createHmac('sha256', key).update(`${event.id}.${timestamp}.${body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'user-agent': 'svc-hub-webhooks',
    'x-svc-signature': svcSignature(secret, body),
    'x-svc-event': event.type,
    'x-svc-event-id': event.id,
    'x-svc-timestamp': timestamp,
    'webhook-id': event.id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${standard}`,
  };
}
