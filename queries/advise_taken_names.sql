-- Advise: the relation names an index on one of the given tables could collide with. Returns
-- one row per relation of any kind (pg_class: tables, indexes, sequences, views, materialized
-- views, composite types, foreign tables) in the schema of a given table whose name starts
-- with that table's prefix: schema_name, relation_name. CREATE INDEX without a name steps
-- over every relation of the namespace (ChooseRelationName), not only indexes.
-- Parameters: $1 table oids and $2 name prefixes, pairwise (the start every index name chosen
-- for that table has: advise::naming::lookup_prefix).
-- Minimum server version: 13 (starts_with is 11+). Readable by any role.
SELECT DISTINCT n.nspname::text AS schema_name,
       c.relname::text AS relation_name
FROM unnest($1::oid[], $2::text[]) AS t(table_oid, prefix)
JOIN pg_class tc ON tc.oid = t.table_oid
JOIN pg_class c ON c.relnamespace = tc.relnamespace
               AND starts_with(c.relname::text, t.prefix)
JOIN pg_namespace n ON n.oid = c.relnamespace
ORDER BY 1, 2
