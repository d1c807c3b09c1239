-- Advise: the existing indexes of the given tables, in the pieces a candidate is compared with.
-- Returns one row per index: table_oid, index_name, access_method, key_column_count, columns
-- (pg_get_indexdef per column: the name of a plain column, the text of an expression; key
-- columns first, then INCLUDE columns), opclasses and opclass_defaults (key columns), collations
-- (key columns: NULL unless the index sets a collation other than its column's, or for an
-- expression other than the database default), descending and nulls_first (key columns, from
-- indoption), predicate (pg_get_expr), indisunique, indisvalid, indisprimary, indisexclusion,
-- indisreplident, backs_constraint (a primary key, unique or exclusion constraint uses it),
-- size_bytes, scans (idx_scan since the statistics were reset).
-- Parameters: $1 table oids.
-- Minimum server version: 13. Readable by any role.
SELECT i.indrelid AS table_oid,
       c.relname::text AS index_name,
       am.amname::text AS access_method,
       i.indnkeyatts::int4 AS key_column_count,
       ARRAY(SELECT pg_get_indexdef(i.indexrelid, k, true)
             FROM generate_series(1, i.indnatts::int4) AS k ORDER BY k) AS columns,
       ARRAY(SELECT opc.opcname::text
             FROM unnest(i.indclass::oid[]) WITH ORDINALITY AS u(opc_oid, k)
             JOIN pg_opclass opc ON opc.oid = u.opc_oid ORDER BY u.k) AS opclasses,
       ARRAY(SELECT opc.opcdefault
             FROM unnest(i.indclass::oid[]) WITH ORDINALITY AS u(opc_oid, k)
             JOIN pg_opclass opc ON opc.oid = u.opc_oid ORDER BY u.k) AS opclass_defaults,
       ARRAY(SELECT CASE
                      WHEN u.coll_oid = 0 THEN NULL
                      WHEN i.indkey[u.k - 1] <> 0 AND u.coll_oid = a.attcollation THEN NULL
                      WHEN i.indkey[u.k - 1] = 0 AND u.coll_oid = 100 THEN NULL
                      ELSE coll.collname::text
                    END
             FROM unnest(i.indcollation::oid[]) WITH ORDINALITY AS u(coll_oid, k)
             LEFT JOIN pg_collation coll ON coll.oid = u.coll_oid
             LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[u.k - 1]
             ORDER BY u.k) AS collations,
       ARRAY(SELECT (o & 1) <> 0 FROM unnest(i.indoption::int2[]) WITH ORDINALITY AS u(o, k)
             ORDER BY u.k) AS descending,
       ARRAY(SELECT (o & 2) <> 0 FROM unnest(i.indoption::int2[]) WITH ORDINALITY AS u(o, k)
             ORDER BY u.k) AS nulls_first,
       pg_get_expr(i.indpred, i.indrelid, true) AS predicate,
       i.indisunique,
       i.indisvalid,
       i.indisprimary,
       i.indisexclusion,
       i.indisreplident,
       EXISTS (SELECT 1 FROM pg_constraint con
               WHERE con.conindid = i.indexrelid AND con.contype IN ('p', 'u', 'x')) AS backs_constraint,
       pg_relation_size(i.indexrelid)::float8 AS size_bytes,
       pg_stat_get_numscans(i.indexrelid)::float8 AS scans
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_am am ON am.oid = c.relam
WHERE i.indrelid = ANY($1::oid[])
ORDER BY i.indrelid, c.relname
