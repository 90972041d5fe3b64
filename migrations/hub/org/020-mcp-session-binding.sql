-- An MCP session is the opening token's (hub/mcp/sessions.ts): an OAuth session also stays with
-- the grant its token came from, so a refreshed access token keeps it. Open sessions are also
-- counted per person, not only per token.
ALTER TABLE mcp_sessions ADD COLUMN grant_id text;
CREATE INDEX mcp_sessions_open_by_user ON mcp_sessions (user_id) WHERE closed_at IS NULL;
