-- Which organization an invitation belongs to, by the SHA-256 of its secret (as api_key_index).
CREATE TABLE invitation_index (
  secret_hash text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE
);
