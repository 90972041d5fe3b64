-- Which organization an API key belongs to, by the key's SHA-256: a request names no
-- organization, so its key must lead to one without searching every schema.
CREATE TABLE api_key_index (
  secret_hash text PRIMARY KEY,
  org_id      text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE
);
