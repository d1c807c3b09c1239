-- Sets a table's planner figures in pg_class, for pgplan stats import (what ANALYZE or VACUUM
-- would set; the next of either replaces them). A NULL argument is left as it is.
-- $1: schema, $2: table, $3: relpages, $4: reltuples, $5: relallvisible, $6: relallfrozen.
-- Returns one row: restored (boolean; false when the server refused a figure, with a WARNING).
-- Minimum server version: 18 (pg_restore_relation_stats).
SELECT pg_restore_relation_stats(
    'schemaname', $1::text,
    'relname', $2::text,
    'relpages', $3::integer,
    'reltuples', $4::real,
    'relallvisible', $5::integer,
    'relallfrozen', $6::integer
) AS restored
