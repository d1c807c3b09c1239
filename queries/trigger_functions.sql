-- The functions that the user triggers on the tables a statement writes run, read before the
-- statement runs with writes allowed: a write fires them inside the measured run, so what they
-- reach is judged as if the statement called them (a trigger that calls dblink_exec commits on
-- another connection, whatever pgplan's rollback does).
-- $1: the written tables' names as regclass input (a name that resolves to no table is left
-- out). Returns one row per trigger: table_name (schema.name, quoted as needed), trigger_name,
-- function_schema and function_name (as pg_proc holds them, unquoted).
-- Internal triggers (a foreign key's) are left out: their built-in functions only check or
-- change rows inside the statement's transaction. A disabled trigger (tgenabled 'D') never
-- fires. pg_trigger and pg_proc are readable by any role. Minimum server version: 13.
SELECT DISTINCT format('%I.%I', n.nspname, c.relname) AS table_name,
       t.tgname::text AS trigger_name,
       pn.nspname::text AS function_schema,
       p.proname::text AS function_name
FROM unnest($1::text[]) AS w(name)
JOIN pg_catalog.pg_trigger AS t
  ON t.tgrelid = to_regclass(w.name) AND NOT t.tgisinternal AND t.tgenabled <> 'D'
JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid
JOIN pg_catalog.pg_namespace AS pn ON pn.oid = p.pronamespace
ORDER BY 1, 2
