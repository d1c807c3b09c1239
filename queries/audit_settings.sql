-- Audit: the server settings the checks compare against (autovacuum triggers, freeze limits,
-- block size, hot_standby_feedback).
-- Returns one row per setting that exists on this server: name, setting (text, in the setting's
-- base unit), so a setting an older server lacks (autovacuum_vacuum_insert_* before 13,
-- autovacuum_vacuum_max_threshold before 18) is simply absent.
-- Parameters: $1 text[], the setting names.
-- Minimum server version: 13. Readable by any role.
SELECT name::text AS name,
       setting::text AS setting
FROM pg_settings
WHERE name = ANY($1::text[])
