-- Evicts from shared buffers every buffer of the named tables, their indexes and their TOAST
-- tables, one buffer at a time (pg_buffercache_evict: PostgreSQL 17; superuser only). Dirty
-- buffers are written out first; a pinned buffer stays.
-- $1: text[] of table names as regclass input.
-- Returns one row: evicted (the buffers evicted).
-- Minimum server version: 17 (18 returns a record from pg_buffercache_evict: see
-- buffercache_evict_relations.sql).
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
SELECT count(*) FILTER (WHERE pg_buffercache_evict(b.bufferid))::float8 AS evicted
FROM pg_buffercache AS b
JOIN relations AS r ON b.relfilenode = pg_relation_filenode(r.oid)
WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
