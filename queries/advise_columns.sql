-- Advise: the columns of the given tables with their type, collation and planner statistics.
-- Returns one row per column, in attribute order: table_oid, column_name, type_name
-- (format_type), collation_name (NULL for a type that is not collatable), default_collation (the
-- database's LC_COLLATE, what "default" means), and from pg_stats (the table's own rows, not its
-- inheritance children's; NULL when never analyzed or not readable by this role): null_frac,
-- n_distinct, most_common_vals (as text), most_common_freqs, correlation.
-- Parameters: $1 table oids.
-- Minimum server version: 13. pg_stats shows only columns this role may SELECT.
SELECT a.attrelid AS table_oid,
       a.attname::text AS column_name,
       format_type(a.atttypid, a.atttypmod) AS type_name,
       coll.collname::text AS collation_name,
       (SELECT d.datcollate::text FROM pg_database d
        WHERE d.datname = current_database()) AS default_collation,
       s.null_frac::float8 AS null_frac,
       s.n_distinct::float8 AS n_distinct,
       s.most_common_vals::text::text[] AS most_common_vals,
       s.most_common_freqs::float8[] AS most_common_freqs,
       s.correlation::float8 AS correlation
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_collation coll ON coll.oid = a.attcollation
LEFT JOIN pg_stats s ON s.schemaname = n.nspname
                    AND s.tablename = c.relname
                    AND s.attname = a.attname
                    AND s.inherited = (c.relkind = 'p')
WHERE a.attrelid = ANY($1::oid[])
  AND a.attnum > 0
  AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
