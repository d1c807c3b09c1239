-- After a statement gave up waiting for a lock (lock_timeout, SQLSTATE 55P03): the relation
-- locks other sessions or prepared transactions hold in this database that a query, a write or
-- an index build could have waited for. compare and explain -d read it after their own
-- statement's wait, the workload after one query's. $1 (text[]) names tables whose every lock
-- but ACCESS SHARE counts (CREATE INDEX's SHARE lock waits for any writer; empty for a
-- workload query); on other relations only the modes that block a write (SHARE and stronger),
-- of which a read's ACCESS SHARE waits for ACCESS EXCLUSIVE only, which the caller picks out.
-- Returns one row per lock, strongest and oldest first: schema_name, table_name, pid (NULL for
-- a prepared transaction), mode (as pg_locks names it), application_name, xact_age_seconds
-- (NULL when not readable by this role).
-- Minimum server version: 13. Readable by any role (other roles' sessions' details need
-- pg_read_all_stats).
SELECT n.nspname::text AS schema_name,
       c.relname::text AS table_name,
       l.pid,
       l.mode,
       a.application_name::text AS application_name,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_age_seconds
FROM pg_catalog.pg_locks AS l
JOIN pg_catalog.pg_class AS c ON c.oid = l.relation
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'relation'
  AND l.granted
  AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
  AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
  AND (l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
       OR (l.mode <> 'AccessShareLock'
           AND l.relation = ANY (ARRAY(SELECT to_regclass(t)::oid FROM unnest($1::text[]) AS t))))
ORDER BY l.mode = 'AccessExclusiveLock' DESC, a.xact_start NULLS LAST
