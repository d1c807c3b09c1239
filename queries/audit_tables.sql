-- Audit: every table, materialized view and partitioned table in scope, with its planner
-- figures, storage options, freeze ages and statistics counters (zeros on a standby).
-- Returns one row per table: table_oid, schema_name, table_name, kind (r, m, p), persistence,
-- relpages, reltuples, relallvisible, reloptions, heap_bytes, table_bytes, frozen_xid_age,
-- multixact_age, the pg_stat_all_tables counters the checks weigh (writes, live and dead
-- tuples, modifications since analyze and inserts since vacuum, analyze counts) and last_* times as
-- epoch seconds.
-- Also parent_oid (a partition's parent, from pg_inherits), inherited_statistics (a partitioned
-- table: whether pg_stats shows the inherited statistics only ANALYZE of the parent writes; null
-- for other tables), and its TOAST table: toast_oid, toast_name, toast_relpages, toast_reltuples,
-- toast_reloptions (the toast.* options live there) and the TOAST table's own counters
-- (toast_n_live_tup, toast_n_dead_tup, toast_n_ins_since_vacuum, toast_last_vacuum_epoch,
-- toast_last_autovacuum_epoch): autovacuum handles a TOAST table as a table of its own.
-- Sizes are relpages × block_size (heap, plus its TOAST table for table_bytes) as of the last
-- VACUUM, ANALYZE or CREATE INDEX: pg_relation_size() would open and lock every relation (over
-- a second for 60,000 relations on a fresh connection, and a wait behind any DDL's lock).
-- block_size is read in a sub-select, which the server runs once (an InitPlan): a bare
-- current_setting() is stable, not immutable, so it would be looked up and parsed for every row
-- (audit_indexes.sql does the same: 8-10% of its execution on 50,000 indexes).
-- The counters come from the pg_stat_get_* functions the pg_stat_all_tables view is built on,
-- called directly to skip the view's joins.
-- Parameters: $1 text[] only these schemas (empty: all), $2 text[] never these schemas,
-- $3 text[] / $4 text[] only these tables as (schema or '', table) pairs (empty: all).
-- Minimum server version: 13. Readable by any role.
SELECT c.oid AS table_oid,
       n.nspname::text AS schema_name,
       c.relname::text AS table_name,
       c.relkind::text AS kind,
       c.relpersistence::text AS persistence,
       c.relpages::int8 AS relpages,
       c.reltuples::float8 AS reltuples,
       c.relallvisible::int8 AS relallvisible,
       coalesce(c.reloptions, '{}')::text[] AS reloptions,
       c.relpages::int8 * (SELECT current_setting('block_size')::int8) AS heap_bytes,
       (c.relpages::int8 + coalesce(toast.relpages, 0)::int8)
         * (SELECT current_setting('block_size')::int8) AS table_bytes,
       CASE WHEN c.relkind <> 'p' THEN age(c.relfrozenxid)::int8 END AS frozen_xid_age,
       CASE WHEN c.relkind <> 'p' THEN mxid_age(c.relminmxid)::int8 END AS multixact_age,
       pg_stat_get_tuples_inserted(c.oid) AS n_tup_ins,
       pg_stat_get_tuples_updated(c.oid) AS n_tup_upd,
       pg_stat_get_tuples_hot_updated(c.oid) AS n_tup_hot_upd,
       pg_stat_get_tuples_deleted(c.oid) AS n_tup_del,
       pg_stat_get_live_tuples(c.oid) AS n_live_tup,
       pg_stat_get_dead_tuples(c.oid) AS n_dead_tup,
       pg_stat_get_mod_since_analyze(c.oid) AS n_mod_since_analyze,
       pg_stat_get_ins_since_vacuum(c.oid) AS n_ins_since_vacuum,
       extract(epoch FROM pg_stat_get_last_vacuum_time(c.oid))::float8 AS last_vacuum_epoch,
       extract(epoch FROM pg_stat_get_last_autovacuum_time(c.oid))::float8 AS last_autovacuum_epoch,
       extract(epoch FROM pg_stat_get_last_analyze_time(c.oid))::float8 AS last_analyze_epoch,
       extract(epoch FROM pg_stat_get_last_autoanalyze_time(c.oid))::float8 AS last_autoanalyze_epoch,
       pg_stat_get_analyze_count(c.oid) AS analyze_count,
       pg_stat_get_autoanalyze_count(c.oid) AS autoanalyze_count,
       CASE WHEN c.relispartition THEN
         (SELECT inh.inhparent FROM pg_inherits inh WHERE inh.inhrelid = c.oid LIMIT 1)
       END AS parent_oid,
       CASE WHEN c.relkind = 'p' THEN
         EXISTS (SELECT 1 FROM pg_stats st
                 WHERE st.schemaname = n.nspname AND st.tablename = c.relname AND st.inherited)
       END AS inherited_statistics,
       toast.oid AS toast_oid,
       toast.relname::text AS toast_name,
       toast.relpages::int8 AS toast_relpages,
       toast.reltuples::float8 AS toast_reltuples,
       coalesce(toast.reloptions, '{}')::text[] AS toast_reloptions,
       pg_stat_get_live_tuples(toast.oid) AS toast_n_live_tup,
       pg_stat_get_dead_tuples(toast.oid) AS toast_n_dead_tup,
       pg_stat_get_ins_since_vacuum(toast.oid) AS toast_n_ins_since_vacuum,
       extract(epoch FROM pg_stat_get_last_vacuum_time(toast.oid))::float8 AS toast_last_vacuum_epoch,
       extract(epoch FROM pg_stat_get_last_autovacuum_time(toast.oid))::float8 AS toast_last_autovacuum_epoch
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_class toast ON toast.oid = c.reltoastrelid
WHERE c.relkind IN ('r', 'm', 'p')
  AND c.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_(toast|temp_)'
  AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
  AND NOT (n.nspname = ANY($2::text[]))
  AND (cardinality($4::text[]) = 0
       OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS f(schema_name, table_name)
                  WHERE f.table_name = c.relname AND f.schema_name IN ('', n.nspname)))
