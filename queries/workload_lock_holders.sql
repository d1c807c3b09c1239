-- The locks other sessions hold on this database's relations that a workload query may have
-- waited for past lock_timeout: granted relation locks in the modes that conflict with a
-- write's ROW EXCLUSIVE (SHARE and above); a read's ACCESS SHARE waits for ACCESS EXCLUSIVE
-- only, which the caller picks out.
-- Returns one row per lock: relation (text, schema.table quoted as needed), relname (text),
-- mode (text, as pg_locks names it), pid (int4; null for a prepared transaction's lock).
-- Minimum server version: 9.6.
SELECT format('%I.%I', n.nspname, c.relname) AS relation,
       c.relname::text AS relname,
       l.mode,
       l.pid
FROM pg_locks AS l
JOIN pg_class AS c ON c.oid = l.relation
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE l.locktype = 'relation'
  AND l.granted
  AND l.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())
  AND l.pid IS DISTINCT FROM pg_backend_pid()
  AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
ORDER BY 1, 4
