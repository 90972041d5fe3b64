-- OAuth hardening (issue 25). A grant is a login_sessions row of its organization (client_id
-- set); this table says what the control schema must know of it: the browser session it was
-- consented from (signing out ends it) and the refresh tokens it has spent (a spent one used
-- again ends the whole grant, RFC 9700 section 4.14.2).
CREATE TABLE oauth_grants (
  id              text PRIMARY KEY,
  org_id          text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  client_id       text NOT NULL,
  consent_session text,
  resource        text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oauth_grants_consent ON oauth_grants (org_id, consent_session);
CREATE INDEX oauth_grants_created ON oauth_grants (created_at);
CREATE TABLE oauth_spent_refresh (
  secret_hash text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  grant_id    text NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX oauth_spent_refresh_expires ON oauth_spent_refresh (expires_at);
-- The browser session (and its provider) a code was consented from.
ALTER TABLE oauth_codes ADD COLUMN consent_session text;
ALTER TABLE oauth_codes ADD COLUMN provider_id text;
-- Clients never used (no token within a day) are swept; so are pending requests once expired.
ALTER TABLE oauth_clients ADD COLUMN last_used_at timestamptz;
CREATE INDEX oauth_clients_created ON oauth_clients (created_at);
CREATE INDEX oauth_clients_last_used ON oauth_clients (last_used_at);
CREATE INDEX oauth_requests_expires ON oauth_requests (expires_at);
