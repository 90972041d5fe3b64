-- A counter per organization that every change to who may do what bumps, in the change's own
-- transaction: keys revoked, roles, memberships, groups, installed packs, revoked tokens. Every
-- request reads it (with its rate-limit count), so a hub process that cached a caller's identity
-- resolves it again before serving the first request after the change commits.
CREATE TABLE org_epochs (
  org_id text PRIMARY KEY REFERENCES organizations (id) ON DELETE CASCADE,
  epoch  bigint NOT NULL DEFAULT 0
);
