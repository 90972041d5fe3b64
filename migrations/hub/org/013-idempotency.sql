-- Idempotency keys (hub/http/idempotency.ts): a write sent with an Idempotency-Key header is
-- claimed here in the write's own transaction and its answer kept, so a client that retries after
-- a lost response (the engine's outbox) gets the first answer back instead of a second write.
CREATE TABLE idempotency_keys (
  user_id      text NOT NULL,
  key          text NOT NULL,
  request_hash text NOT NULL,
  status       integer,
  response     jsonb,
  headers      jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);
