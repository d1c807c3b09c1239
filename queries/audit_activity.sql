-- Audit: every client backend of the server (pg_stat_activity), the audit's own session marked
-- (it takes a connection slot too), for the session checks: connection slots are the server's,
-- idle holders and lock queues are filtered to the audited database by the checks.
-- Returns one row per client backend: pid, audit_session, database_name, user_name,
-- application_name, client_addr, state, wait_event_type, wait_event, backend_age_seconds,
-- xact_age_seconds, query_age_seconds, state_age_seconds, xmin_age_xids, xid_age_xids,
-- blocking_pids, query.
-- pg_blocking_pids() takes the lock manager's partition locks for a moment, so it is called only
-- for sessions waiting for a heavyweight lock (wait_event_type 'Lock'), never for all of them.
-- It lists both the holders of a conflicting lock and the sessions queued ahead for one (what
-- makes readers wait behind a queued ALTER TABLE), and 0 for a prepared transaction.
-- Walsenders and background workers have slots of their own (max_wal_senders,
-- max_worker_processes) and are not client backends.
-- Without pg_read_all_stats, other roles' sessions show no state, query or client address.
-- Minimum server version: 13. Readable by any role (pg_monitor sees every session).
SELECT a.pid,
       a.pid = pg_backend_pid() AS audit_session,
       a.datname::text AS database_name,
       a.usename::text AS user_name,
       a.application_name,
       a.client_addr::text AS client_addr,
       a.state,
       a.wait_event_type,
       a.wait_event,
       extract(epoch FROM now() - a.backend_start)::float8 AS backend_age_seconds,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_age_seconds,
       extract(epoch FROM now() - a.query_start)::float8 AS query_age_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_age_seconds,
       age(a.backend_xmin)::int8 AS xmin_age_xids,
       age(a.backend_xid)::int8 AS xid_age_xids,
       CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) END AS blocking_pids,
       left(a.query, 500) AS query
FROM pg_stat_activity a
WHERE a.backend_type = 'client backend'
