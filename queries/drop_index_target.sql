-- Compare: what a --drop-index name resolves to, before any work. Returns one row: found (the
-- name resolves to a relation on the search path), relkind ('i' an index, 'I' a partitioned
-- index; NULL when not found), qualified (schema.name as the catalog spells it), and constraint_type
-- ('p' primary key, 'u' unique, 'x' exclusion; NULL when the index backs no constraint) with
-- constraint_name. PostgreSQL 13+.
SELECT c.oid IS NOT NULL AS found,
       c.relkind::text AS relkind,
       n.nspname || '.' || c.relname AS qualified,
       con.contype::text AS constraint_type,
       con.conname::text AS constraint_name
FROM (SELECT to_regclass($1::text) AS oid) AS r
LEFT JOIN pg_catalog.pg_class AS c ON c.oid = r.oid
LEFT JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_constraint AS con
       ON con.conindid = c.oid AND con.contype IN ('p', 'u', 'x')
ORDER BY con.contype NULLS LAST
LIMIT 1
