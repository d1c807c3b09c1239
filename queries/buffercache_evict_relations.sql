-- Evicts from shared buffers every buffer of the named tables, their indexes and their TOAST
-- tables (pg_buffercache_evict_relation: PostgreSQL 18; superuser only). Dirty buffers are
-- written out first; a pinned buffer stays.
-- $1: text[] of table names as regclass input.
-- Returns one row: evicted (the buffers evicted).
-- Minimum server version: 18.
WITH tables AS (
    SELECT c.oid, c.reltoastrelid
    FROM unnest($1::text[]) AS t(name)
    JOIN pg_class AS c ON c.oid = to_regclass(t.name)
), relations AS (
    SELECT oid FROM tables
    UNION SELECT reltoastrelid FROM tables WHERE reltoastrelid <> 0
    UNION SELECT i.indexrelid FROM pg_index AS i
          WHERE i.indrelid IN (SELECT oid FROM tables UNION SELECT reltoastrelid FROM tables)
)
SELECT coalesce(sum((pg_buffercache_evict_relation(r.oid::regclass)).buffers_evicted), 0)::float8
       AS evicted
FROM relations AS r
