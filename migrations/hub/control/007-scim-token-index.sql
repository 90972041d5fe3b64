-- Which organization a SCIM token belongs to, by the SHA-256 of the token (as api_key_index):
-- a SCIM request names no organization either.
CREATE TABLE scim_token_index (
  secret_hash text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE
);
