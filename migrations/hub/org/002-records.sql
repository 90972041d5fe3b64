-- Episodes (the timeline), sessions and engram change events (history).
CREATE TABLE episodes (
  id      text PRIMARY KEY,
  at      timestamptz NOT NULL,
  agent   text NOT NULL,
  channel text,
  session text,
  summary text NOT NULL,
  doc     jsonb NOT NULL
);
CREATE INDEX episodes_at ON episodes (at DESC);
CREATE INDEX episodes_summary ON episodes USING gin (to_tsvector('english', summary));

CREATE TABLE sessions (
  id         text PRIMARY KEY,
  doc        jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE engram_events (
  seq       bigserial PRIMARY KEY,
  at        timestamptz NOT NULL,
  action    text NOT NULL,
  engram_id text,
  session   text,
  doc       jsonb NOT NULL
);
CREATE INDEX engram_events_engram ON engram_events (engram_id, at);
CREATE INDEX engram_events_action ON engram_events (action, at);
