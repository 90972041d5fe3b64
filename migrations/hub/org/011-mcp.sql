-- MCP sessions (hub/mcp): each belongs to the token that opened it and is refused to any other
-- user; `holder` names the hub process holding an SSE stream, so a message that reaches another
-- process can be relayed to it. Closed sessions stay a while for the audit trail.
CREATE TABLE mcp_sessions (
  id           text PRIMARY KEY,
  user_id      text NOT NULL,
  token_id     text NOT NULL,
  transport    text NOT NULL CHECK (transport IN ('sse', 'http')),
  profile      text NOT NULL CHECK (profile IN ('full', 'lean')),
  client_name  text,
  holder       text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  closed_at    timestamptz
);
CREATE INDEX mcp_sessions_open_by_token ON mcp_sessions (token_id) WHERE closed_at IS NULL;

-- Which MCP tools this organization's users may call: allow (null: every tool) minus deny.
CREATE TABLE mcp_tool_policy (
  singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  allow      text[],
  deny       text[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- A JSON-RPC answer on its way to the process that holds its session's SSE stream, when the
-- message reached another process (NOTIFY carries only the row's id: payloads are small).
CREATE TABLE mcp_relay (
  id         bigserial PRIMARY KEY,
  session_id text NOT NULL,
  message    jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
