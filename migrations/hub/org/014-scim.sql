-- SCIM 2.0 provisioning (hub/scim). SCIM tokens are the identity provider's credential: they
-- act on users and groups only, never as a user. Users and groups keep what the provider sent
-- (userName, externalId, name, emails, the enterprise extension...) as jsonb beside the hub's
-- own columns; the hub name and the group path are derived once, at creation, and never change
-- (they name scopes: user:<name>, group:<path>).
CREATE TABLE scim_tokens (
  id           text PRIMARY KEY,
  name         text NOT NULL,
  -- SHA-256 of the whole token (svc_scim_…); the token itself is shown once, at creation.
  secret_hash  text NOT NULL UNIQUE,
  prefix       text NOT NULL,
  created_by   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz
);
ALTER TABLE users ADD COLUMN scim jsonb;
ALTER TABLE users ADD COLUMN scim_user_name text;
ALTER TABLE users ADD COLUMN scim_modified_at timestamptz;
-- A user deleted through SCIM stays (audit rows and engrams name it) but is gone for SCIM, and
-- its userName may be given to someone new.
ALTER TABLE users ADD COLUMN deleted_at timestamptz;
CREATE UNIQUE INDEX users_scim_user_name ON users (lower(scim_user_name)) WHERE deleted_at IS NULL;
ALTER TABLE groups ADD COLUMN scim jsonb;
ALTER TABLE groups ADD COLUMN scim_modified_at timestamptz;
