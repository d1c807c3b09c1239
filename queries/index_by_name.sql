-- An existing index found by name (as regclass input, optionally schema-qualified), for
-- --drop-index: its size, its table and the name plans use for it.
-- $1: the index name as the user wrote it.
-- Returns: size_bytes, table_name (regclass text), relname (the bare name EXPLAIN shows).
-- Minimum server version: 9.4.
SELECT pg_relation_size(c.oid)::float8 AS size_bytes,
       i.indrelid::regclass::text AS table_name,
       c.relname::text AS relname
FROM pg_class AS c
JOIN pg_index AS i ON i.indexrelid = c.oid
WHERE c.oid = to_regclass($1)
  AND c.relkind IN ('i', 'I')
