-- Audit: the deparsed text of the few indexes a finding may quote (audit::deparse chooses them):
-- expression_definitions (per column, null for plain columns), predicate, and for an invalid
-- index its whole definition (to rebuild it).
-- pg_get_indexdef and pg_get_expr open the index's table with an ACCESS SHARE lock (held to the
-- end of the transaction, and queued behind an ACCESS EXCLUSIVE one), so db::catalog runs this
-- in a savepoint with a short lock_timeout that it rolls back (releasing those locks), in
-- batches, and never for a relation another session holds or awaits in ACCESS EXCLUSIVE mode.
-- Parameters: $1 oid[], the indexes.
-- Minimum server version: 13. Readable by any role.
SELECT i.indexrelid AS index_oid,
       CASE WHEN i.indexprs IS NOT NULL THEN
         ARRAY(SELECT CASE WHEN i.indkey[k - 1] = 0 THEN pg_get_indexdef(i.indexrelid, k, true) END
               FROM generate_series(1, i.indnatts) AS k
               ORDER BY k)
       END AS expression_definitions,
       pg_get_expr(i.indpred, i.indrelid, true) AS predicate,
       CASE WHEN NOT i.indisvalid THEN pg_get_indexdef(i.indexrelid) END AS definition
FROM pg_index i
WHERE i.indexrelid = ANY($1::oid[])
