-- Installed packs: the manifest as installed and the engrams it brought.
CREATE TABLE packs (
  name         text PRIMARY KEY,
  version      text NOT NULL,
  manifest     jsonb NOT NULL,
  engram_ids   text[] NOT NULL,
  installed_at timestamptz NOT NULL DEFAULT now(),
  installed_by text NOT NULL
);
