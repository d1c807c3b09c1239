-- What the statistics system knows about the tables a plan reads, for `explain -d`'s findings.
-- $1: text[] of table names as regclass input ('public.events', '"Odd"."Name"').
-- Returns per table: name (schema-qualified, quoted as needed), reltuples, relpages,
-- relallvisible, n_live_tup, n_mod_since_analyze, analyze_threshold and analyze_scale_factor
-- (the table's storage options, else the server's settings, as autovacuum reads them),
-- last_analyze_age_seconds and last_vacuum_age_seconds (manual or auto, whichever is later;
-- null when none is on record), and how the later one ran (manual or autovacuum).
-- Minimum server version: 13.
SELECT DISTINCT ON (c.oid)
       format('%I.%I', n.nspname, c.relname) AS name,
       c.reltuples::float8 AS reltuples,
       c.relpages::float8 AS relpages,
       c.relallvisible::float8 AS relallvisible,
       s.n_live_tup::float8 AS n_live_tup,
       s.n_mod_since_analyze::float8 AS n_mod_since_analyze,
       coalesce((SELECT option_value FROM pg_options_to_table(c.reloptions)
                 WHERE option_name = 'autovacuum_analyze_threshold')::float8,
                current_setting('autovacuum_analyze_threshold')::float8) AS analyze_threshold,
       coalesce((SELECT option_value FROM pg_options_to_table(c.reloptions)
                 WHERE option_name = 'autovacuum_analyze_scale_factor')::float8,
                current_setting('autovacuum_analyze_scale_factor')::float8) AS analyze_scale_factor,
       extract(epoch FROM now() - greatest(s.last_analyze, s.last_autoanalyze))::float8
           AS last_analyze_age_seconds,
       (s.last_autoanalyze IS NOT NULL
        AND s.last_autoanalyze >= coalesce(s.last_analyze, '-infinity')) AS last_analyze_auto,
       extract(epoch FROM now() - greatest(s.last_vacuum, s.last_autovacuum))::float8
           AS last_vacuum_age_seconds,
       (s.last_autovacuum IS NOT NULL
        AND s.last_autovacuum >= coalesce(s.last_vacuum, '-infinity')) AS last_vacuum_auto
FROM unnest($1::text[]) AS t(name)
JOIN pg_class AS c ON c.oid = to_regclass(t.name)
JOIN pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_all_tables AS s ON s.relid = c.oid
ORDER BY c.oid
