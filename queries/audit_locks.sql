-- Audit: relations of the audited database that another session or a prepared transaction
-- holds, or waits for, in ACCESS EXCLUSIVE mode: the one mode an ACCESS SHARE lock (what
-- deparsing an index's expressions takes on its table) must wait for, queued behind a waiter
-- too. With who: pid (null for a prepared transaction), granted, gid (the prepared
-- transaction's name), since_epoch (when the holder's transaction started, or was prepared).
-- A prepared transaction's locks belong to no backend: pg_locks shows them with a null pid and
-- the virtual transaction it had, which also holds the lock on its own transaction id: that
-- names it in pg_prepared_xacts.
-- Returns one row per lock: relation_oid, pid, granted, gid, since_epoch.
-- Minimum server version: 13. Readable by any role (other roles' transaction start times need
-- pg_read_all_stats).
SELECT l.relation AS relation_oid,
       l.pid,
       l.granted,
       p.gid,
       extract(epoch FROM coalesce(p.prepared, a.xact_start))::float8 AS since_epoch
FROM pg_locks l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid
LEFT JOIN pg_locks x ON l.pid IS NULL
                     AND x.pid IS NULL
                     AND x.locktype = 'transactionid'
                     AND x.virtualtransaction = l.virtualtransaction
LEFT JOIN pg_prepared_xacts p ON p.transaction = x.transactionid
WHERE l.locktype = 'relation'
  AND l.mode = 'AccessExclusiveLock'
  AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
  AND l.pid IS DISTINCT FROM pg_backend_pid()
