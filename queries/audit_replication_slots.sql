-- Audit: replication slots, with the xmin they hold and the WAL they keep.
-- Returns one row per slot: slot_name, slot_type, database_name, temporary, active, active_pid,
-- xmin_age_xids, catalog_xmin_age_xids, retained_wal_bytes (from the current WAL position, or
-- the replayed one on a standby), wal_status, inactive_since_epoch (17+, null before).
-- Placeholder filled per version by db::catalog: {{inactive_since}}.
-- Minimum server version: 13 (wal_status). Readable by any role.
SELECT s.slot_name::text AS slot_name,
       s.slot_type::text AS slot_type,
       s.database::text AS database_name,
       s.temporary,
       s.active,
       s.active_pid,
       age(s.xmin)::int8 AS xmin_age_xids,
       age(s.catalog_xmin)::int8 AS catalog_xmin_age_xids,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()
                            ELSE pg_current_wal_lsn() END,
                       s.restart_lsn)::float8 AS retained_wal_bytes,
       s.wal_status,
       extract(epoch FROM {{inactive_since}})::float8 AS inactive_since_epoch
FROM pg_replication_slots s
