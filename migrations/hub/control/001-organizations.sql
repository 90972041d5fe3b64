-- The hub's control schema (svc_hub): organizations and where their data lives.
CREATE TABLE organizations (
  id          text PRIMARY KEY,
  slug        text NOT NULL UNIQUE,
  schema_name text NOT NULL UNIQUE,
  -- Engram ids minted by this organization: ENG-{id_prefix}-YYYY-MMDD-NNN.
  id_prefix   text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
