-- Sets one column's statistics in pg_statistic, for pgplan stats import (the next ANALYZE
-- replaces them). A NULL argument is left out; values are read with the column's type.
-- Every argument must have exactly the type the function expects (attname is text, not name):
-- one of another type is skipped with a WARNING.
-- $1: schema, $2: table, $3: column, $4: inherited, $5: null_frac, $6: avg_width,
-- $7: n_distinct, $8: most_common_vals, $9: most_common_freqs, $10: histogram_bounds,
-- $11: correlation, $12: most_common_elems, $13: most_common_elem_freqs,
-- $14: elem_count_histogram, $15: range_length_histogram, $16: range_empty_frac,
-- $17: range_bounds_histogram.
-- Returns one row: restored (boolean; false when the server refused a figure, with a WARNING).
-- Minimum server version: 18 (pg_restore_attribute_stats).
SELECT pg_restore_attribute_stats(
    'schemaname', $1::text,
    'relname', $2::text,
    'attname', $3::text,
    'inherited', $4::boolean,
    'null_frac', $5::real,
    'avg_width', $6::integer,
    'n_distinct', $7::real,
    'most_common_vals', $8::text,
    'most_common_freqs', $9::real[],
    'histogram_bounds', $10::text,
    'correlation', $11::real,
    'most_common_elems', $12::text,
    'most_common_elem_freqs', $13::real[],
    'elem_count_histogram', $14::real[],
    'range_length_histogram', $15::text,
    'range_empty_frac', $16::real,
    'range_bounds_histogram', $17::text
) AS restored
