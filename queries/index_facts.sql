-- Size and shape of one index on one table.
-- $1: the table as regclass input (as written in CREATE INDEX ... ON table); $2: the index name
-- as stored (folded to lower case unless it was quoted).
-- Returns: size_bytes, has_expressions (the planner has no statistics on an expression index
-- until ANALYZE), qualified name.
-- Minimum server version: 9.4.
SELECT pg_relation_size(i.indexrelid)::float8 AS size_bytes,
       i.indexprs IS NOT NULL AS has_expressions,
       i.indexrelid::regclass::text AS qualified_name
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = $1::regclass
  AND c.relname = $2
