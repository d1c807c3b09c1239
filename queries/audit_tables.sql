-- Audit: every table, materialized view and partitioned table in scope, with its size, planner
-- figures, storage options, freeze ages and statistics counters (zeros on a standby).
-- Returns one row per table: table_oid, schema_name, table_name, kind (r, m, p), persistence,
-- relpages, reltuples, relallvisible, reloptions, heap_bytes, table_bytes, frozen_xid_age,
-- multixact_age, the pg_stat_all_tables counters, and last_* times as epoch seconds.
-- Parameters: $1 text[] only these schemas (empty: all), $2 text[] never these schemas,
-- $3 text[] / $4 text[] only these tables as (schema or '', table) pairs (empty: all).
-- Minimum server version: 13. Readable by any role (sizes need no privilege on the table).
SELECT c.oid AS table_oid,
       n.nspname::text AS schema_name,
       c.relname::text AS table_name,
       c.relkind::text AS kind,
       c.relpersistence::text AS persistence,
       c.relpages::int8 AS relpages,
       c.reltuples::float8 AS reltuples,
       c.relallvisible::int8 AS relallvisible,
       coalesce(c.reloptions, '{}')::text[] AS reloptions,
       CASE WHEN c.relkind <> 'p' THEN pg_relation_size(c.oid) END AS heap_bytes,
       CASE WHEN c.relkind <> 'p' THEN pg_table_size(c.oid) END AS table_bytes,
       CASE WHEN c.relkind <> 'p' THEN age(c.relfrozenxid)::int8 END AS frozen_xid_age,
       CASE WHEN c.relkind <> 'p' THEN mxid_age(c.relminmxid)::int8 END AS multixact_age,
       s.seq_scan, s.idx_scan, s.n_tup_ins, s.n_tup_upd, s.n_tup_hot_upd, s.n_tup_del,
       s.n_live_tup, s.n_dead_tup, s.n_mod_since_analyze,
       s.n_ins_since_vacuum,
       extract(epoch FROM s.last_vacuum)::float8 AS last_vacuum_epoch,
       extract(epoch FROM s.last_autovacuum)::float8 AS last_autovacuum_epoch,
       extract(epoch FROM s.last_analyze)::float8 AS last_analyze_epoch,
       extract(epoch FROM s.last_autoanalyze)::float8 AS last_autoanalyze_epoch,
       s.vacuum_count, s.autovacuum_count, s.analyze_count, s.autoanalyze_count
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
WHERE c.relkind IN ('r', 'm', 'p')
  AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_(toast|temp_)'
  AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
  AND NOT (n.nspname = ANY($2::text[]))
  AND (cardinality($4::text[]) = 0
       OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS f(schema_name, table_name)
                  WHERE f.table_name = c.relname AND f.schema_name IN ('', n.nspname)))
