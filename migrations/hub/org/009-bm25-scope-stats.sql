-- BM25's collection statistics per scope (rows and tokens; retired engrams count, as FTS5 counts
-- them): a caller's ranking sums them over the scopes it may read, so scores say nothing about
-- engrams it cannot see. Document frequencies come from postings filtered the same way.
CREATE TABLE fts_scope_stats (
  scope    text PRIMARY KEY,
  n_rows   bigint NOT NULL,
  n_tokens bigint NOT NULL
);
INSERT INTO fts_scope_stats (scope, n_rows, n_tokens) SELECT scope, count(*), coalesce(sum(ntok), 0) FROM engrams GROUP BY scope;
DROP TABLE fts_stats;
