-- Single-use sign-in links (svc hub login-link, POST /admin/login-links): valid minutes, used once
-- for one browser session, only their hash kept. Who made one and the session it became stay on
-- the row (and in the audit log).
CREATE TABLE login_links (
  id          text PRIMARY KEY,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  secret_hash text NOT NULL UNIQUE,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  session_id  text
);
CREATE INDEX login_links_expiry ON login_links (expires_at);
