-- Audit: the columns of the tables in scope with their statistics, for the bloat estimates and
-- the names of indexed columns. Used when the role cannot read pg_statistic (pg_monitor cannot);
-- audit_columns_statistic.sql reads pg_statistic directly, three times faster, when it can.
-- Returns one row per column: table_oid, attnum, column_name, type_length (attlen), type_align,
-- not_null, dropped, and pg_stats' null_frac, avg_width and n_distinct — null when the column was
-- never analyzed, or when this role may not SELECT it (pg_stats hides those rows; pg_statistic
-- itself is superuser-only).
-- Parameters: as audit_tables.sql ($1 schemas, $2 excluded schemas, $3/$4 tables).
-- Minimum server version: 13.
WITH in_scope AS (
    SELECT c.oid, n.nspname, c.relname
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'm', 'p')
      AND c.relpersistence <> 't'
      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname !~ '^pg_(toast|temp_)'
      AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
      AND NOT (n.nspname = ANY($2::text[]))
      AND (cardinality($4::text[]) = 0
           OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS f(schema_name, table_name)
                      WHERE f.table_name = c.relname AND f.schema_name IN ('', n.nspname)))
)
SELECT a.attrelid AS table_oid,
       a.attnum::int2 AS attnum,
       a.attname::text AS column_name,
       a.attlen::int2 AS type_length,
       a.attalign::text AS type_align,
       a.attnotnull AS not_null,
       a.attisdropped AS dropped,
       st.null_frac::float8 AS null_frac,
       st.avg_width::float8 AS avg_width,
       st.n_distinct::float8 AS n_distinct
FROM in_scope c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
LEFT JOIN pg_stats st ON st.schemaname = c.nspname
                     AND st.tablename = c.relname
                     AND st.attname = a.attname
                     AND NOT st.inherited
