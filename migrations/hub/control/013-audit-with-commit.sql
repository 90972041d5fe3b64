-- Fails the statement that calls it: an audit append sent with its COMMIT, chained to a head the
-- chain has moved past (hub/audit/audit-log.ts guessedAppend). The COMMIT does not run, and the
-- hub appends again after reading the head.
CREATE FUNCTION audit_head_moved() RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION 'the audit chain has moved past the head this append was chained to';
END $$;
