-- The tables, partitioned tables and materialized views of a schema, for pgplan stats export
-- --schema. $1: the schema name. Returns one row per relation: name (text, schema.table quoted
-- as needed), by name. Minimum server version: 9.4.
SELECT format('%I.%I', n.nspname, c.relname) AS name
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE n.nspname = $1
  AND c.relkind IN ('r', 'p', 'm')
ORDER BY c.relname
