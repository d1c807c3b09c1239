-- A table's pg_stats rows, for pgplan stats export: what ANALYZE stored per column (and, for a
-- parent, per column over its children: inherited).
-- $1: schema, $2: table. Returns one row per column and inherited flag: column (text),
-- inherited (boolean), null_frac (real), avg_width (integer), n_distinct (real),
-- most_common_vals (text), most_common_freqs (real[]), histogram_bounds (text), correlation
-- (real), most_common_elems (text), most_common_elem_freqs (real[]), elem_count_histogram
-- (real[]), range_length_histogram (text), range_empty_frac (real), range_bounds_histogram
-- (text).
-- Minimum server version: 13. {{range}} is the three range columns on 17+ (they appeared in
-- pg_stats then), NULLs before.
SELECT attname::text AS "column",
       inherited,
       null_frac,
       avg_width,
       n_distinct,
       most_common_vals::text,
       most_common_freqs::real[],
       histogram_bounds::text,
       correlation,
       most_common_elems::text,
       most_common_elem_freqs::real[],
       elem_count_histogram::real[],
       {{range}}
FROM pg_stats
WHERE schemaname = $1
  AND tablename = $2
ORDER BY attname, inherited
