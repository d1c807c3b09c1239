-- A table's write counters and shape, for the write side of a candidate.
-- $1: the table as regclass input.
-- Returns: name (schema.table, quoted as needed), inserts, updates, hot_updates, deletes
-- (float8, since the counters' last reset), index_count (float8), columns (text[]: its
-- columns' names, as stored).
-- Minimum server version: 9.4.
SELECT format('%I.%I', s.schemaname, s.relname) AS name,
       s.n_tup_ins::float8 AS inserts,
       s.n_tup_upd::float8 AS updates,
       s.n_tup_hot_upd::float8 AS hot_updates,
       s.n_tup_del::float8 AS deletes,
       (SELECT count(*) FROM pg_index AS i WHERE i.indrelid = s.relid)::float8 AS index_count,
       ARRAY(SELECT a.attname::text FROM pg_attribute AS a
             WHERE a.attrelid = s.relid AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attnum) AS columns
FROM pg_stat_user_tables AS s
WHERE s.relid = to_regclass($1)
