-- A table's planner figures and its columns, for pgplan stats export (and, on the database an
-- import goes to, to match the file's columns against).
-- $1: the table as regclass input. Returns at most one row: schema, table (text), relpages
-- (integer), reltuples (real), relallvisible (integer), relallfrozen (integer; NULL before
-- PostgreSQL 18), columns (text: a JSON array of {name, type} in column order).
-- Minimum server version: 13. {{relallfrozen}} is c.relallfrozen on 18+, NULL::integer before.
SELECT n.nspname::text AS schema,
       c.relname::text AS "table",
       c.relpages,
       c.reltuples,
       c.relallvisible,
       {{relallfrozen}} AS relallfrozen,
       coalesce((SELECT json_agg(json_build_object('name', a.attname,
                                                   'type', format_type(a.atttypid, a.atttypmod))
                                 ORDER BY a.attnum)
                 FROM pg_attribute AS a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '[]')::text AS columns
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1)
  AND c.relkind IN ('r', 'p', 'm')
