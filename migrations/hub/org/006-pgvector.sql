-- Where pgvector is installed (PGlite always; a server when its package is), vectors also live in
-- a pgvector column and the nearest ones are found in SQL. Without it the real[] column serves,
-- compared in the hub process. The extension is database-wide: created once, under a lock.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    PERFORM pg_advisory_xact_lock(hashtext('svc_hub:create-extension-vector'));
    CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;
    ALTER TABLE engram_vectors ADD COLUMN embedding_v public.vector;
  END IF;
END $$;
