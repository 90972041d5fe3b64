-- A revision number per engram write, from one sequence per organization: hub processes keep
-- BM25 postings in memory (hub/data/postings-cache.ts) and catch up by reading the engrams whose
-- revision is above the highest they hold. Writes of an organization hold its advisory lock, so
-- revisions commit in order and a reader never skips one that commits late.
CREATE SEQUENCE engram_rev;
ALTER TABLE engrams ADD COLUMN rev bigint NOT NULL DEFAULT nextval('engram_rev');
CREATE INDEX engrams_rev ON engrams (rev);
