-- Users, groups (a tree), memberships and API keys.
CREATE TABLE users (
  id           text PRIMARY KEY,
  name         text NOT NULL UNIQUE,
  email        text,
  role         text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
  active       boolean NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE groups (
  id         text PRIMARY KEY,
  -- The group's path (eng/backend): its scope is group:<path>.
  path       text NOT NULL UNIQUE,
  parent_id  text REFERENCES groups (id),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE memberships (
  group_id   text NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- A member may write to the group's scope unless read_only.
  read_only  boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, user_id)
);
CREATE TABLE api_keys (
  id           text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name         text NOT NULL,
  -- SHA-256 of the whole key (svc_sk_…); the key itself is shown once, at issue.
  secret_hash  text NOT NULL UNIQUE,
  prefix       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz
);
