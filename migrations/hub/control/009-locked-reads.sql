-- An organization's lock and the first read it guards, in one round trip. A plain statement's
-- snapshot is taken before it waits for the lock, so it could miss a write committed meanwhile;
-- a VOLATILE function takes a fresh snapshot for each query it runs, after the lock is held.
-- The lock keys are the ones the hub's code takes with pg_advisory_xact_lock directly.

-- The audit chain's last row, under the organization's audit lock (held to the end of the transaction).
CREATE FUNCTION audit_chain_head(org_schema text) RETURNS TABLE (seq bigint, hash text)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc_hub:audit:' || org_schema));
  RETURN QUERY EXECUTE format('SELECT seq, hash FROM %I.audit_log ORDER BY seq DESC LIMIT 1', org_schema);
END $$;

-- The engrams with this content hash (in the readable scopes, or all when null), under the
-- organization's write lock: learn's dedup check, made race-free across processes.
CREATE FUNCTION engrams_by_hash_locked(org_schema text, wanted_hash text, readable text[]) RETURNS SETOF jsonb
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('svc_hub:write:' || org_schema));
  RETURN QUERY EXECUTE format('SELECT doc FROM %I.engrams WHERE content_hash = $1 AND ($2::text[] IS NULL OR scope = ANY ($2)) ORDER BY seq', org_schema)
    USING wanted_hash, readable;
END $$;
