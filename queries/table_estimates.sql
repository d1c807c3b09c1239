-- The planner's size, row-count and all-visible estimates for the named tables, as pg_class
-- holds them. Building an index updates them in place (heap_inplace_update), so they outlive
-- the rollback; pgplan reads them before and after to name and put back what changed.
-- $1: text[] of table names as regclass input ('public.events', 'events', '"Odd"."Name"').
-- Returns: name (schema-qualified and quoted as needed, so two spellings of one table give one
-- row), relpages, reltuples, relallvisible, and the unquoted schema and table name (the keys
-- pg_restore_relation_stats takes). Names that do not resolve are left out.
-- Minimum server version: 9.4 (to_regclass).
SELECT DISTINCT ON (c.oid)
       format('%I.%I', n.nspname, c.relname) AS name,
       c.relpages::float8 AS relpages,
       c.reltuples::float8 AS reltuples,
       c.relallvisible::float8 AS relallvisible,
       n.nspname::text AS schema_name,
       c.relname::text AS table_name
FROM unnest($1::text[]) AS t(name)
JOIN pg_class AS c ON c.oid = to_regclass(t.name)
JOIN pg_namespace AS n ON n.oid = c.relnamespace
ORDER BY c.oid
