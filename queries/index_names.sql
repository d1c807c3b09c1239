-- The names of every index on a table, to find the one PostgreSQL named for an unnamed candidate.
-- $1: the table as regclass input. Returns: relname.
-- Minimum server version: 9.4.
SELECT c.relname::text AS relname
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = $1::regclass
