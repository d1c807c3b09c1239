-- How many entries a just-built index holds against its table's rows: CREATE INDEX counts both
-- while it builds and stores them in pg_class (a partial index holds only the rows its
-- predicate selects).
-- $1: the index name as stored; $2: the table as regclass input.
-- Returns: index_entries (float8), table_rows (float8).
-- Minimum server version: 9.4.
SELECT i.reltuples::float8 AS index_entries, t.reltuples::float8 AS table_rows
FROM pg_class AS t
JOIN pg_index AS x ON x.indrelid = t.oid
JOIN pg_class AS i ON i.oid = x.indexrelid
WHERE t.oid = to_regclass($2) AND i.relname = $1
