-- Audit: sessions of the audited database that hold a snapshot or a transaction id (what holds
-- the xmin horizon back), the audit's own session excluded. Walsenders are read from
-- pg_stat_replication instead.
-- Returns one row per session: pid, database_name, user_name, application_name, client_addr,
-- backend_type, state, xact_age_seconds, state_age_seconds, xmin_age_xids, xid_age_xids, query.
-- Without pg_read_all_stats, other roles' sessions show no xmin, state or query (the view hides
-- them), so they cannot be found here; db::catalog records that.
-- Minimum server version: 13.
SELECT a.pid,
       a.datname::text AS database_name,
       a.usename::text AS user_name,
       a.application_name,
       a.client_addr::text AS client_addr,
       a.backend_type,
       a.state,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_age_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_age_seconds,
       age(a.backend_xmin)::int8 AS xmin_age_xids,
       age(a.backend_xid)::int8 AS xid_age_xids,
       a.query
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND a.datname = current_database()
  AND a.backend_type IS DISTINCT FROM 'walsender'
  AND (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
