-- Engrams: the document as jsonb (unknown fields kept), plus the columns queries filter on.
CREATE TABLE engrams (
  id           text PRIMARY KEY,
  seq          bigserial NOT NULL UNIQUE,
  scope        text NOT NULL,
  status       text NOT NULL,
  type         text NOT NULL,
  domain       text,
  content_hash text NOT NULL,
  pinned       boolean NOT NULL DEFAULT false,
  -- Tokens in the full-text columns (BM25's document length).
  ntok         integer NOT NULL DEFAULT 0,
  doc          jsonb NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX engrams_hash ON engrams (content_hash);
CREATE INDEX engrams_scope ON engrams (scope, status);

-- BM25 postings, as SQLite FTS5's bm25() sees them: per term and engram, the column-weighted
-- count (statement 4, tags 2, domain 2, rationale 1). Every engram is indexed, retired ones too
-- (FTS5 counts them in N and in document frequency), and filtered at query time.
-- The columns recall filters and scores on are copied into each posting (rewritten with the
-- engram on every write), so ranking reads postings only, then fetches the top documents.
CREATE TABLE engram_terms (
  term      text NOT NULL,
  engram_id text NOT NULL REFERENCES engrams (id) ON DELETE CASCADE,
  wtf       double precision NOT NULL,
  ntok      integer NOT NULL,
  live      boolean NOT NULL,
  scope     text NOT NULL,
  seq       bigint NOT NULL,
  -- Covering: ranking reads the index only.
  PRIMARY KEY (term, engram_id) INCLUDE (wtf, ntok, live, scope, seq)
);
CREATE INDEX engram_terms_engram ON engram_terms (engram_id);
CREATE TABLE fts_stats (
  id       integer PRIMARY KEY CHECK (id = 1),
  n_rows   bigint NOT NULL,
  n_tokens bigint NOT NULL
);
INSERT INTO fts_stats VALUES (1, 0, 0);

CREATE TABLE id_counters (
  stem text PRIMARY KEY,
  last integer NOT NULL
);

-- Vectors as float4 arrays: works on every PostgreSQL; cosine is computed by the hub.
CREATE TABLE engram_vectors (
  engram_id    text PRIMARY KEY REFERENCES engrams (id) ON DELETE CASCADE,
  model        text NOT NULL,
  content_hash text NOT NULL,
  embedding    real[] NOT NULL
);
CREATE INDEX engram_vectors_model ON engram_vectors (model);
