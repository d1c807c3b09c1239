-- Audit: the heavyweight locks the session checks name: every advisory lock, every lock waited
-- for (of any type: a row's transaction id, a tuple, a relation), the locks granted on the relations someone waits for (the holders of a queue), and the
-- relation locks of sessions idle in a transaction and of prepared transactions (null pid).
-- The audit's own session is excluded but for advisory locks: pgplan takes none, so any its
-- session holds were left on the server connection by an earlier client of a pooler. A relation is named only when it is in the audited
-- database (another database's oids mean nothing here).
-- Returns one row per lock: pid, locktype, mode, granted, schema_name, relation_name,
-- advisory_key, wait_seconds.
-- An advisory lock's key: objsubid 1 is one bigint (classid high 32 bits, objid low), 2 is two
-- integers (classid, objid), as pg_advisory_lock takes them.
-- pg_locks.waitstart appeared in 14; before, wait_seconds is null (the checks use the waiting
-- statement's start instead).
-- Reading pg_locks takes each lock-manager partition's lock briefly, never a heavyweight lock.
-- Minimum server version: 13. Readable by any role.
SELECT l.pid,
       l.locktype,
       l.mode,
       l.granted,
       n.nspname::text AS schema_name,
       c.relname::text AS relation_name,
       CASE l.objsubid
           WHEN 1 THEN ((l.classid::int8 << 32) | l.objid::int8)::text
           WHEN 2 THEN l.classid::text || ', ' || l.objid::text
       END AS advisory_key,
       {{lock_wait_seconds}} AS wait_seconds
FROM pg_locks l
LEFT JOIN pg_class c ON l.locktype = 'relation'
                    AND l.database = (SELECT d.oid FROM pg_database d
                                      WHERE d.datname = current_database())
                    AND c.oid = l.relation
LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE (l.pid IS DISTINCT FROM pg_backend_pid() OR l.locktype = 'advisory')
  AND (NOT l.granted
       OR l.locktype = 'advisory'
       OR (l.locktype = 'relation'
           AND (l.pid IS NULL
                OR l.relation IN (SELECT w.relation FROM pg_locks w
                                  WHERE NOT w.granted AND w.locktype = 'relation')
                OR l.pid IN (SELECT a.pid FROM pg_stat_activity a
                             WHERE a.state LIKE 'idle in transaction%'))))
