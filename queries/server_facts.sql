-- Server and session facts, read once per connection.
-- Returns one row: version_num, version, in_recovery, read_only, current_user, database,
-- superuser, pg_monitor, pg_read_all_stats, extensions (name=version), available_extensions (the
-- names of those whose package is installed on the server), tls_version, tls_cipher,
-- system_identifier (null without the privilege to read pg_control_system()), started_at,
-- uptime_seconds, index_catalog_bytes (pg_index's size: how many indexes there are to read,
-- known before reading them; pg_relation_size needs no privilege).
-- Minimum server version: 10 (pg_monitor and pg_read_all_stats roles).
SELECT current_setting('server_version_num') AS version_num,
       split_part(current_setting('server_version'), ' ', 1) AS version,
       pg_is_in_recovery() AS in_recovery,
       -- What a fresh transaction would be (libpq's read-write check), not this READ ONLY one.
       CASE WHEN pg_is_in_recovery() THEN 'on'
            ELSE current_setting('default_transaction_read_only') END AS read_only,
       current_user::text AS current_user,
       current_database()::text AS database,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser,
       pg_has_role(current_user, 'pg_monitor', 'MEMBER') AS pg_monitor,
       pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER') AS pg_read_all_stats,
       ARRAY(SELECT extname || '=' || extversion FROM pg_extension ORDER BY extname)::text[] AS extensions,
       ARRAY(SELECT name FROM pg_available_extensions ORDER BY name)::text[] AS available_extensions,
       (SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl) AS tls_version,
       (SELECT cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl) AS tls_cipher,
       CASE WHEN has_function_privilege('pg_control_system()', 'EXECUTE')
            THEN (SELECT system_identifier::text FROM pg_control_system())
       END AS system_identifier,
       to_char(pg_postmaster_start_time() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS started_at,
       extract(epoch FROM now() - pg_postmaster_start_time())::float8 AS uptime_seconds,
       pg_relation_size('pg_catalog.pg_index')::int8 AS index_catalog_bytes
