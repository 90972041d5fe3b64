-- Learn's first read, under the organization's write lock, in one round trip: the engrams with
-- this content hash (as engrams_by_hash_locked, which processes of the previous version still
-- call) and, first, a row with the last id taken under this id stem. Every id is allocated under
-- the write lock, so that number holds until the transaction ends: the write allocates its id
-- without a round trip and stores the counter in the statement that writes the engram.
CREATE FUNCTION engrams_by_hash_and_counter_locked(org_schema text, wanted_hash text, readable text[], id_stem text)
RETURNS TABLE (doc jsonb, last_id integer)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc_hub:write:' || org_schema));
  RETURN QUERY EXECUTE format('SELECT NULL::jsonb, coalesce((SELECT last FROM %I.id_counters WHERE stem = $1), 0)', org_schema)
    USING id_stem;
  RETURN QUERY EXECUTE format('SELECT doc, NULL::integer FROM %I.engrams WHERE content_hash = $1 AND ($2::text[] IS NULL OR scope = ANY ($2)) ORDER BY seq', org_schema)
    USING wanted_hash, readable;
END $$;
