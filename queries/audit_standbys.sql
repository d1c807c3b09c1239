-- Audit: standbys streaming from this node, with the xmin their hot_standby_feedback holds.
-- pg_stat_replication also lists logical replication (a walsender holding a logical slot) and
-- base backups in progress (state 'backup'); neither is a standby, so both are left out.
-- Returns one row per walsender: pid, application_name, client_addr, state, sync_state,
-- xmin_age_xids, replay_lag_seconds.
-- Without pg_read_all_stats, other roles' walsenders show no details.
-- Minimum server version: 13.
SELECT r.pid,
       r.application_name,
       r.client_addr::text AS client_addr,
       r.state,
       r.sync_state,
       age(r.backend_xmin)::int8 AS xmin_age_xids,
       extract(epoch FROM r.replay_lag)::float8 AS replay_lag_seconds
FROM pg_stat_replication r
WHERE r.state IS DISTINCT FROM 'backup'
  AND NOT EXISTS (SELECT 1 FROM pg_replication_slots s
                  WHERE s.active_pid = r.pid AND s.slot_type = 'logical')
