-- Audit: CREATE INDEX and REINDEX runs in progress in the audited database, so an invalid index
-- that is still being built is not reported as a failure.
-- Returns one row per build: pid, table_oid, index_oid (0 for a non-concurrent build), command,
-- phase, blocks_total, blocks_done, tuples_total, tuples_done, lockers_total, lockers_done,
-- current_locker_pid, database_name.
-- Minimum server version: 13 (the view's columns are the same from 13 to 18).
SELECT p.pid,
       p.datname::text AS database_name,
       p.relid AS table_oid,
       p.index_relid AS index_oid,
       p.command,
       p.phase,
       p.blocks_total, p.blocks_done, p.tuples_total, p.tuples_done,
       p.lockers_total, p.lockers_done, p.current_locker_pid
FROM pg_stat_progress_create_index p
WHERE p.datname = current_database()
