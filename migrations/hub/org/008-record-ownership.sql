-- Episodes and sessions belong to the user who wrote them and live in a scope, read by the same
-- rules as engrams. Rows from before this migration had neither: they get scope 'unowned:legacy',
-- which no one's readable set holds, rather than a guess that could show them to the wrong people.
ALTER TABLE episodes ADD COLUMN owner text;
ALTER TABLE episodes ADD COLUMN scope text NOT NULL DEFAULT 'unowned:legacy';
ALTER TABLE episodes ALTER COLUMN scope DROP DEFAULT;
CREATE INDEX episodes_scope_at ON episodes (scope, at DESC);
ALTER TABLE sessions ADD COLUMN owner text;
ALTER TABLE sessions ADD COLUMN scope text NOT NULL DEFAULT 'unowned:legacy';
ALTER TABLE sessions ALTER COLUMN scope DROP DEFAULT;
