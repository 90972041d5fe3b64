-- Postings are written only by the statement that writes their engram (hub/data/pg-backend.ts,
-- putEngram), and the hub never deletes an engram, so the foreign key guarded nothing the writer
-- does not. It cost every create a lookup and a row lock on the engram per posting (about 18),
-- and PostgreSQL caches the plan of that check per connection: planned while an organization's
-- table was empty, it scanned the whole table until the next ANALYZE, so an organization filled
-- through the API slowed down as it grew (200 creates a second falling to 100 by 6,000 engrams).
ALTER TABLE engram_terms DROP CONSTRAINT IF EXISTS engram_terms_engram_id_fkey;
