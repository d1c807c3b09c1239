-- Audit: the columns of the tables in scope with their statistics, for the bloat estimates and
-- the names of indexed columns. Used when the role cannot read pg_statistic (pg_monitor cannot);
-- audit_columns_statistic.sql reads pg_statistic directly, three times faster, when it can.
-- Returns one row per column: table_oid, attnum, column_name, type_length (attlen), type_align,
-- not_null, dropped, and pg_stats' null_frac, avg_width and n_distinct — null when the column was
-- never analyzed, or when this role may not SELECT it (pg_stats hides those rows; pg_statistic
-- itself is superuser-only).
-- pg_stats is built for every analyzed column of the database at once, checking the role's
-- privilege on each: on a large catalog that costs a pg_monitor role, which may read no table,
-- more than the rest of its audit. So `readable` marks the tables this role may SELECT (any of
-- the cheap signs first: pg_read_all_data, owning the table, an ACL on it or on a column; then
-- has_any_column_privilege), and when at most 1,000 tables are (the usual audit role: none),
-- pg_stats is looked up for those tables' columns alone, by name through its indexes; otherwise
-- it is joined whole, as a role that reads everything is served fastest. One branch runs (each
-- gated by an InitPlan); both return what pg_stats shows this role.
-- Parameters: as audit_tables.sql ($1 schemas, $2 excluded schemas, $3/$4 tables).
-- Minimum server version: 13 (pg_read_all_data exists from 14; on 13 no role is a member).
WITH in_scope AS (
    SELECT c.oid, n.nspname, c.relname,
           EXISTS (SELECT 1 FROM pg_roles r
                   WHERE r.rolname = 'pg_read_all_data' AND pg_has_role(r.oid, 'USAGE'))
           OR ((pg_has_role(c.relowner, 'USAGE')
                OR c.relacl IS NOT NULL
                OR c.oid IN (SELECT attrelid FROM pg_attribute WHERE attacl IS NOT NULL))
               AND has_any_column_privilege(c.oid, 'SELECT')) AS readable
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
), few_readable AS (
    SELECT count(*) FILTER (WHERE readable) <= 1000 AS few FROM in_scope
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
-- OFFSET 0 keeps the lookup a per-column subquery (not flattened into a join with the whole
-- view), so an unreadable table's columns skip it at its one-time filter.
LEFT JOIN LATERAL (SELECT s.null_frac, s.avg_width, s.n_distinct
                   FROM pg_stats s
                   WHERE c.readable
                     AND s.schemaname = c.nspname
                     AND s.tablename = c.relname
                     AND s.attname = a.attname
                     AND NOT s.inherited
                   OFFSET 0) st ON true
WHERE (SELECT few FROM few_readable)
UNION ALL
SELECT a.attrelid, a.attnum::int2, a.attname::text, a.attlen::int2, a.attalign::text,
       a.attnotnull, a.attisdropped,
       st.null_frac::float8, st.avg_width::float8, st.n_distinct::float8
FROM in_scope c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
LEFT JOIN pg_stats st ON st.schemaname = c.nspname
                     AND st.tablename = c.relname
                     AND st.attname = a.attname
                     AND NOT st.inherited
WHERE NOT (SELECT few FROM few_readable)
