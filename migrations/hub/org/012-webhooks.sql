-- Webhooks (hub/webhooks): an admin registers a URL and the events it wants; the secret signs
-- each delivery's body. A webhook that keeps failing is disabled, with the reason, until an admin
-- re-enables it. last_success_at tells a receiver that is down (disable it) from one payload it
-- keeps refusing (give that delivery up, keep the webhook).
CREATE TABLE webhooks (
  id              text PRIMARY KEY,
  url             text NOT NULL,
  events          text[] NOT NULL,
  secret          text NOT NULL,
  state           text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'disabled')),
  disabled_reason text,
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_success_at timestamptz
);

-- The outbox: one row per event and webhook, inserted in the transaction of the change that
-- caused it, so a change never commits without its deliveries nor a delivery without its change.
-- Workers of every hub process claim due rows with FOR UPDATE SKIP LOCKED and hold a lease
-- (locked_until) while they send: a worker killed mid-send leaves a row the next one retries.
CREATE TABLE webhook_deliveries (
  id           bigserial PRIMARY KEY,
  webhook_id   text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  event_id     text NOT NULL,
  event        text NOT NULL,
  body         text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  next_at      timestamptz NOT NULL DEFAULT now(),
  locked_until timestamptz,
  attempts     integer NOT NULL DEFAULT 0,
  delivered_at timestamptz,
  failed_at    timestamptz,
  last_status  integer,
  last_error   text,
  latency_ms   integer
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_deliveries_recent ON webhook_deliveries (webhook_id, id DESC);
