-- The lasting-state diff, before and after a run that may fire triggers: the committed-change
-- counters of the tables those triggers write. $1: the tables' names as regclass input,
-- resolved through the session's search_path (a name that resolves to no table is left out).
-- Returns one row per name that resolves: watched_name (the name as given), table_name
-- (schema.name, quoted as needed), changed_rows
-- (n_mod_since_analyze: rows inserted, updated or deleted by committed transactions since the
-- last ANALYZE; a rolled-back transaction adds nothing, unlike n_tup_ins/upd/del, which count
-- every attempt) and analyzes (analyze_count + autoanalyze_count: an ANALYZE resets
-- changed_rows).
-- Another backend's counts reach the view only once it flushes them (15+: at most once a
-- second, and up to 10 s later for an idle backend that flushed within the last second; before
-- 15 through the statistics collector, about 500 ms late), and within one transaction the view
-- keeps the values first read: the caller reads in transactions of their own, more than once.
-- Readable by any role. Minimum server version: 13.
SELECT DISTINCT w.name AS watched_name,
       format('%I.%I', s.schemaname, s.relname) AS table_name,
       s.n_mod_since_analyze AS changed_rows,
       s.analyze_count + s.autoanalyze_count AS analyzes
FROM unnest($1::text[]) AS w(name)
JOIN pg_catalog.pg_stat_all_tables AS s ON s.relid = to_regclass(w.name)
ORDER BY 2, 1
