-- The sessions waiting for a lock that backend $1 (pgplan's worker, by the pid it reported in
-- its own transaction, so a transaction-mode pooler does not mislead it) holds or is queued
-- ahead of, per pg_blocking_pids; takes no heavyweight lock on any user table.
-- Returns: pid, waited_ms (since the waiting statement started: pg_locks.waitstart exists from
-- PostgreSQL 14 only, and a writer blocked by a build waits from its statement's start), relation
-- (the relation it waits to lock, NULL when it waits on something else).
-- Minimum server version: 9.6 (pg_blocking_pids).
SELECT a.pid,
       (extract(epoch FROM clock_timestamp() - a.query_start) * 1000)::float8 AS waited_ms,
       (SELECT l.relation::regclass::text
          FROM pg_locks l
         WHERE l.pid = a.pid AND NOT l.granted AND l.relation IS NOT NULL
         LIMIT 1) AS relation
  FROM pg_stat_activity a
 WHERE a.wait_event_type = 'Lock'
   AND a.pid <> pg_backend_pid()
   AND $1::int4 = ANY (pg_blocking_pids(a.pid))
 ORDER BY waited_ms DESC
