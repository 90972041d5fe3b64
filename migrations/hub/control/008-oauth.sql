-- The hub as an OAuth 2.0 authorization server for MCP clients (RFC 8414, 7591, 7636, 8707).
-- Clients register themselves (public clients: PKCE, no secret) and belong to no organization:
-- the person who signs in decides which one the grant is for.
CREATE TABLE oauth_clients (
  client_id     text PRIMARY KEY,
  client_name   text NOT NULL,
  redirect_uris text[] NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
-- An authorization request waiting for its person to sign in and consent (10 minutes).
CREATE TABLE oauth_requests (
  id             text PRIMARY KEY,
  client_id      text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  state          text,
  code_challenge text NOT NULL,
  resource       text NOT NULL,
  -- The consent form's anti-forgery token (also in a cookie on the browser).
  csrf           text NOT NULL,
  expires_at     timestamptz NOT NULL
);
-- An authorization code (by its SHA-256), used once, within a minute.
CREATE TABLE oauth_codes (
  code_hash      text PRIMARY KEY,
  client_id      text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
  org_id         text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id        text NOT NULL,
  redirect_uri   text NOT NULL,
  code_challenge text NOT NULL,
  resource       text NOT NULL,
  expires_at     timestamptz NOT NULL
);
