-- How long pg_stat_statements has been counting, in seconds: since its last reset on 14+
-- (pg_stat_statements_info.stats_reset), since the server started before (13 records no reset
-- time; a reset since then makes calls per day an underestimate, and the report says so).
-- Returns: window_seconds (float8), source (text: 'reset' or 'server_start').
-- Placeholder filled per version by db::workload: {{since}}.
-- Minimum server version: 13.
SELECT extract(epoch FROM now() - since)::float8 AS window_seconds, source
FROM ({{since}}) AS w(since, source)
