-- Sign-in through an organization's identity providers (OAuth 2.0 with GitHub, OIDC with any
-- issuer, GitLab included, SAML 2.0). A provider's client secret is write-only through the API.
CREATE TABLE identity_providers (
  id             text PRIMARY KEY,
  -- The provider's name in login URLs: /auth/<org>/<name>/login.
  name           text NOT NULL UNIQUE,
  kind           text NOT NULL CHECK (kind IN ('oidc', 'github', 'gitlab', 'saml')),
  -- oidc: the issuer; github and gitlab: the instance's base URL (github.com, gitlab.com by
  -- default); saml: the IdP's entity ID.
  issuer         text NOT NULL,
  -- OAuth and OIDC only.
  client_id      text,
  client_secret  text,
  -- SAML only: where AuthnRequests go (HTTP-Redirect binding), and the IdP's signing key or certificate (PEM).
  sso_url        text,
  idp_cert       text,
  -- E-mail domains allowed to sign in (lowercase); empty: any verified address.
  allowed_domains text[] NOT NULL DEFAULT '{}',
  -- Whether a first sign-in by someone the organization does not know creates their user.
  create_users   boolean NOT NULL DEFAULT false,
  default_role   text NOT NULL DEFAULT 'viewer' CHECK (default_role IN ('viewer', 'editor', 'admin')),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);
-- Which provider account is which user, once linked at a first sign-in.
CREATE TABLE external_identities (
  provider_id text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  subject     text NOT NULL,
  user_id     text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider_id, subject)
);
-- A sign-in on its way through a provider: found by the SHA-256 of its state, used once.
CREATE TABLE login_attempts (
  state_hash    text PRIMARY KEY,
  provider_id   text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  code_verifier text NOT NULL,
  nonce         text NOT NULL,
  return_to     text NOT NULL,
  expires_at    timestamptz NOT NULL
);
-- SAML: the AuthnRequests sent (a response must answer one of them, once), and the assertions
-- accepted (never twice), each until it expires.
CREATE TABLE saml_requests (
  id          text PRIMARY KEY,
  provider_id text NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
  -- What node-saml stored with the ID: when the request was made.
  issued      text NOT NULL,
  expires_at  timestamptz NOT NULL
);
CREATE TABLE saml_assertions (
  id         text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
-- A signed-in session: a browser's (its HttpOnly cookie holds the secret) or an MCP client's
-- OAuth grant (client_id set; the secret is its refresh token, replaced at each use). Hub tokens
-- minted from it carry its id, so ending it ends them.
CREATE TABLE login_sessions (
  id           text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  provider_id  text REFERENCES identity_providers (id) ON DELETE SET NULL,
  client_id    text,
  secret_hash  text NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);
CREATE INDEX login_sessions_user ON login_sessions (user_id);
