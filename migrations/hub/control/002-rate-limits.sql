-- Rate-limit counters shared by every hub process on this database: one row per token, class
-- (all requests, or writes) and fixed one-minute window.
CREATE TABLE rate_limits (
  token_key    text NOT NULL,
  bucket       text NOT NULL,
  window_start bigint NOT NULL,
  hits         integer NOT NULL,
  PRIMARY KEY (token_key, bucket, window_start)
);
