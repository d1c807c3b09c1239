-- Audit: the audited database's freeze ages and the evidence of how long statistics have been
-- counting.
-- Returns one row: now_epoch, database_stats_reset_epoch (pg_stat_database.stats_reset),
-- bgwriter_stats_reset_epoch, archiver_stats_reset_epoch, checkpointer_stats_reset_epoch
-- (17+, null before), frozen_xid_age, multixact_age, database_created_epoch (when the
-- database's PG_VERSION file was written, i.e. CREATE DATABASE: pg_stat_file is superuser-only
-- by default, so null for other roles and for a database outside the default tablespace).
-- Times are epoch seconds (float8).
-- Placeholders filled by db::catalog: {{checkpointer_stats_reset}} (per version),
-- {{database_created}} (per privilege).
-- Minimum server version: 13. Readable by any role.
SELECT extract(epoch FROM now())::float8 AS now_epoch,
       extract(epoch FROM s.stats_reset)::float8 AS database_stats_reset_epoch,
       extract(epoch FROM (SELECT b.stats_reset FROM pg_stat_bgwriter b))::float8 AS bgwriter_stats_reset_epoch,
       extract(epoch FROM (SELECT a.stats_reset FROM pg_stat_archiver a))::float8 AS archiver_stats_reset_epoch,
       extract(epoch FROM {{checkpointer_stats_reset}})::float8 AS checkpointer_stats_reset_epoch,
       age(d.datfrozenxid)::int8 AS frozen_xid_age,
       mxid_age(d.datminmxid)::int8 AS multixact_age,
       extract(epoch FROM {{database_created}})::float8 AS database_created_epoch
FROM pg_database d
LEFT JOIN pg_stat_database s ON s.datid = d.oid
WHERE d.datname = current_database()
