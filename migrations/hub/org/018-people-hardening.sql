-- People hardening (issue 25). SCIM manages only the people it provisioned: provisioned_by is
-- 'scim' for a user SCIM created (null: REST, sign-in, or the organization's first admin).
-- Users SCIM created before this column existed are found in the audit chain.
ALTER TABLE users ADD COLUMN provisioned_by text;
UPDATE users SET provisioned_by = 'scim'
 WHERE kind = 'person' AND scim IS NOT NULL
   AND 'user:' || id IN (SELECT resource FROM audit_log WHERE action = 'scim.user.create' AND outcome = 201 AND resource IS NOT NULL);
-- When SCIM last changed the user's e-mail address after creating them: sign-in never links an
-- account to a user by an address SCIM changed (an identity provider's token could otherwise
-- point someone's address at an account it controls).
ALTER TABLE users ADD COLUMN email_scim_changed_at timestamptz;
-- One person per address in an organization, any case. Earlier duplicates keep the oldest
-- user's address (the one sign-in picked); the newer users' addresses are cleared.
UPDATE users u SET email = NULL
 WHERE u.email IS NOT NULL AND u.deleted_at IS NULL
   AND EXISTS (SELECT 1 FROM users o WHERE o.deleted_at IS NULL AND lower(o.email) = lower(u.email)
                  AND (o.created_at, o.id) < (u.created_at, u.id));
CREATE UNIQUE INDEX users_email_lower ON users (lower(email)) WHERE deleted_at IS NULL AND email IS NOT NULL;
