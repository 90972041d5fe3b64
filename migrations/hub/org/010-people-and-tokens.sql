-- People and service accounts: keys act as their owner, and only a service account (a user of
-- its own kind, for machines) may be given a key by someone else. token_version revokes every
-- hub token of a user at once; revoked_tokens revokes one (by its jti) until it would expire.
ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'service'));
ALTER TABLE users ADD COLUMN token_version integer NOT NULL DEFAULT 0;
CREATE TABLE revoked_tokens (
  jti        text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
-- One-time invitations: how a person gets their first key without anyone holding it for them.
CREATE TABLE invitations (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  secret_hash text NOT NULL UNIQUE,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  redeemed_at timestamptz
);
