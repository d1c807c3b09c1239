-- A column's statistics, for choosing parameter values: its most common values with their
-- frequencies, and its histogram bounds, all as text.
-- $1: schema (text); $2: table (text); $3: column (text).
-- Returns at most one row: most_common_vals (text[]), most_common_freqs (float8[]),
-- histogram_bounds (text[]). The table's own statistics are preferred to those of its
-- inheritance tree. pg_stats shows only the columns the role may read.
-- Minimum server version: 9.4.
SELECT coalesce(most_common_vals::text::text[], '{}') AS most_common_vals,
       coalesce(most_common_freqs::float8[], '{}') AS most_common_freqs,
       coalesce(histogram_bounds::text::text[], '{}') AS histogram_bounds
FROM pg_stats
WHERE schemaname = $1 AND tablename = $2 AND attname = $3
ORDER BY inherited
LIMIT 1
