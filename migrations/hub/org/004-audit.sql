-- The audit log: append-only, each row HMAC-signed over its predecessor's hash.
CREATE TABLE audit_log (
  seq         bigint PRIMARY KEY,
  -- ISO 8601 text, exactly as signed.
  at          text NOT NULL,
  actor       text NOT NULL,
  token_id    text,
  action      text NOT NULL,
  resource    text,
  outcome     integer NOT NULL,
  details     jsonb NOT NULL DEFAULT '{}'::jsonb,
  prev_hash   text NOT NULL,
  hash        text NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
