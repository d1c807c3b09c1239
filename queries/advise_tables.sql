-- Advise: the tables a workload's plans scan, with their size, visibility map and write
-- counters. Returns one row per table: table_oid, schema_name, table_name, reltuples (-1 when
-- never vacuumed or analyzed, from 14 on), relpages, relallvisible, and the inserted, updated,
-- deleted and HOT-updated row counters of pg_stat_user_tables (the pg_stat_get_* functions it is
-- built on, called directly) on this node since the last reset.
-- Parameters: $1 schema names ('' matches any schema) and $2 table names, pairwise.
-- Minimum server version: 13. Readable by any role.
SELECT c.oid AS table_oid,
       n.nspname::text AS schema_name,
       c.relname::text AS table_name,
       c.reltuples::float8 AS reltuples,
       c.relpages::int8 AS relpages,
       c.relallvisible::int8 AS relallvisible,
       pg_stat_get_tuples_inserted(c.oid) AS inserts,
       pg_stat_get_tuples_updated(c.oid) AS updates,
       pg_stat_get_tuples_deleted(c.oid) AS deletes,
       pg_stat_get_tuples_hot_updated(c.oid) AS hot_updates
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm', 'p')
  AND EXISTS (SELECT 1 FROM unnest($1::text[], $2::text[]) AS f(schema_name, table_name)
              WHERE f.table_name = c.relname AND f.schema_name IN ('', n.nspname))
ORDER BY n.nspname, c.relname
