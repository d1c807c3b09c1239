-- Audit: sessions of the audited database that hold a snapshot or a transaction id (what holds
-- the xmin horizon back), the audit's own session excluded. Walsenders are read from
-- pg_stat_replication instead.
-- Returns one row per session: pid, database_name, user_name, application_name, client_addr,
-- backend_type, state, xact_age_seconds, state_age_seconds, xmin_age_xids, xid_age_xids, query.
-- A lazy VACUUM (manual or autovacuum) is left out: it runs with PROC_IN_VACUUM, which
-- ComputeXidHorizons (procarray.c) skips, so its xmin holds nobody back. pg_stat_progress_vacuum
-- lists exactly those runs (VACUUM FULL is in pg_stat_progress_cluster and does hold the
-- horizon; so does the ANALYZE step of VACUUM ANALYZE, in pg_stat_progress_analyze), and its
-- pid column is shown to every role. Parallel vacuum workers carry the flag too (leader_pid).
-- An autovacuum worker is also left out while its query says VACUUM and it is not analyzing:
-- it sets the flag before it reports progress.
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
  AND a.pid NOT IN (SELECT v.pid FROM pg_stat_progress_vacuum v)
  AND (a.leader_pid IS NULL OR a.leader_pid NOT IN (SELECT v.pid FROM pg_stat_progress_vacuum v))
  AND NOT (a.backend_type = 'autovacuum worker'
           AND a.query LIKE 'autovacuum: VACUUM%'
           AND a.pid NOT IN (SELECT p.pid FROM pg_stat_progress_analyze p))
