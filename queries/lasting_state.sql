-- Compare and explain -d, before and after the runs, in pgplan's own session: what on the
-- server outlives a transaction and so a rollback. Returns one row per item: kind
-- ('replication slot', 'prepared transaction', 'advisory lock', and one 'backend' row whose
-- name is the session's pid: through a transaction-mode pooler two reads may be served by two
-- server connections, whose advisory locks cannot be compared), name (the slot's name, the
-- prepared transaction's gid, the advisory lock's key) and detail (what it is).
-- Replication slots and prepared transactions are the server's (any session may have made
-- them meanwhile); advisory locks are only those this session holds, which a function the
-- query called took and the rollback did not release (session-level locks outlive it).
-- Reading pg_replication_slots, pg_prepared_xacts and pg_locks takes no heavyweight lock.
-- Minimum server version: 13. Readable by any role.
SELECT 'replication slot' AS kind,
       slot_name::text AS name,
       slot_type || CASE WHEN active THEN ', active' ELSE ', inactive' END
           || COALESCE(', database ' || database::text, '') AS detail
FROM pg_replication_slots
UNION ALL
SELECT 'prepared transaction', gid, 'database ' || database::text || ', owner ' || owner::text
FROM pg_prepared_xacts
UNION ALL
SELECT 'advisory lock',
       CASE objsubid
           WHEN 1 THEN ((classid::int8 << 32) | objid::int8)::text
           ELSE classid::text || ', ' || objid::text
       END,
       mode
FROM pg_locks
WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
UNION ALL
SELECT 'backend', pg_backend_pid()::text, 'the session that read this'
ORDER BY 1, 2
