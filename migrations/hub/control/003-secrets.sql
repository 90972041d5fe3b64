-- Deployment secrets generated at first start (JWT signing, audit HMAC), shared by every process
-- unless the environment overrides them.
CREATE TABLE secrets (
  name       text PRIMARY KEY,
  value      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
