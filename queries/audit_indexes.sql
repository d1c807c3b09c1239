-- Audit: every index of the tables in scope, with its definition in pieces (table column
-- numbers, expression trees, operator classes, collations, DESC/NULLS options, predicate tree),
-- flags, the constraint it backs, size, planner figures and this node's scan counters.
-- Nothing here deparses or locks: expressions and predicates come as the node trees the server
-- stores (pg_node_tree as text), which is what two indexes are compared by; the few definitions
-- a finding quotes are deparsed by audit_index_definitions.sql.
-- Returns one row per index: index_oid, table_oid, schema_name, table_name, index_name,
-- access_method, the indis* flags, indnullsnotdistinct (false before 15), indimmediate,
-- partitioned (relkind 'I'), partition_child, key_column_count,
-- attnums, opclasses, collations, options, expression_trees (indexprs: one node per expression
-- column, in column order; plain columns' names come from audit_columns.sql), predicate_tree
-- (indpred), constraint_name, constraint_type, reloptions, relpages, reltuples, size_bytes
-- (relpages × block_size, see audit_tables.sql), idx_scan, last_idx_scan_epoch, parent_index_oid
-- (the partitioned index a partition's index is attached to). The counters come from the
-- pg_stat_get_* functions pg_stat_all_indexes is built on, called directly, and only those a
-- check weighs: each call is a statistics lookup per index.
-- Parameters: as audit_tables.sql ($1 schemas, $2 excluded schemas, $3/$4 tables).
-- Placeholders filled per version by db::catalog: {{last_idx_scan}}, {{indnullsnotdistinct}}.
-- Minimum server version: 13. Readable by any role.
SELECT i.indexrelid AS index_oid,
       i.indrelid AS table_oid,
       n.nspname::text AS schema_name,
       t.relname::text AS table_name,
       c.relname::text AS index_name,
       am.amname::text AS access_method,
       i.indisunique, i.indisprimary, i.indisexclusion, i.indisreplident,
       {{indnullsnotdistinct}} AS indnullsnotdistinct, i.indimmediate,
       i.indisvalid, i.indisready, i.indislive,
       c.relkind = 'I' AS partitioned,
       c.relispartition AS partition_child,
       i.indnkeyatts::int4 AS key_column_count,
       i.indkey::int2[] AS attnums,
       i.indclass::oid[] AS opclasses,
       i.indcollation::oid[] AS collations,
       i.indoption::int2[] AS options,
       i.indexprs::text AS expression_trees,
       i.indpred::text AS predicate_tree,
       con.conname::text AS constraint_name,
       con.contype::text AS constraint_type,
       coalesce(c.reloptions, '{}')::text[] AS reloptions,
       c.relpages::int8 AS relpages,
       c.reltuples::float8 AS reltuples,
       c.relpages::int8 * (SELECT current_setting('block_size')::int8) AS size_bytes,
       pg_stat_get_numscans(i.indexrelid) AS idx_scan,
       extract(epoch FROM {{last_idx_scan}})::float8 AS last_idx_scan_epoch,
       CASE WHEN c.relispartition THEN
         (SELECT inh.inhparent FROM pg_inherits inh WHERE inh.inhrelid = i.indexrelid LIMIT 1)
       END AS parent_index_oid
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
JOIN pg_am am ON am.oid = c.relam
LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid
                           AND con.conrelid = i.indrelid
                           AND con.contype IN ('p', 'u', 'x')
WHERE t.relkind IN ('r', 'm', 'p')
  AND t.relpersistence <> 't'
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_(toast|temp_)'
  AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
  AND NOT (n.nspname = ANY($2::text[]))
  AND (cardinality($4::text[]) = 0
       OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS f(schema_name, table_name)
                  WHERE f.table_name = t.relname AND f.schema_name IN ('', n.nspname)))
