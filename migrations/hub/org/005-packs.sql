-- Installed packs: the record the engine keeps per pack (manifest, source, engram ids).
CREATE TABLE packs (
  name         text PRIMARY KEY,
  record       jsonb NOT NULL,
  installed_at timestamptz NOT NULL DEFAULT now()
);
