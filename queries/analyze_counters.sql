-- The cumulative statistics counters ANALYZE moves, for the named tables: ANALYZE inside a
-- rolled-back transaction still moves them (they are not transactional), while the statistics
-- it gathered are rolled back.
-- $1: text[] of table names as regclass input. Returns: name (schema-qualified, quoted as
-- needed), n_mod_since_analyze, analyze_count, last_analyze (ISO 8601, or null). Names that do
-- not resolve are left out.
-- Minimum server version: 9.4 (n_mod_since_analyze).
SELECT format('%I.%I', s.schemaname, s.relname) AS name,
       s.n_mod_since_analyze,
       s.analyze_count,
       to_char(s.last_analyze AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS last_analyze
FROM unnest($1::text[]) AS given (name)
JOIN pg_stat_all_tables AS s ON s.relid = to_regclass(given.name)
