-- The lasting-state diff, before a run that may write: the user triggers on the tables the run
-- may write, with their functions' source, so that the tables those functions write (a trigger
-- that writes through dblink commits there, whatever pgplan's rollback does) can be watched.
-- $1: the written tables' names as regclass input (a name that resolves to no table is left
-- out). Returns one row per trigger: table_name and function_name (schema.name, quoted as
-- needed), trigger_name, source (the function's prosrc: a PL body, or a C symbol).
-- Internal triggers (a foreign key's) are left out: they write no table of their own.
-- pg_trigger and pg_proc are readable by any role. Minimum server version: 13.
SELECT DISTINCT format('%I.%I', n.nspname, c.relname) AS table_name,
       t.tgname::text AS trigger_name,
       format('%I.%I', pn.nspname, p.proname) AS function_name,
       p.prosrc AS source
FROM unnest($1::text[]) AS w(name)
JOIN pg_catalog.pg_trigger AS t ON t.tgrelid = to_regclass(w.name) AND NOT t.tgisinternal
JOIN pg_catalog.pg_class AS c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid
JOIN pg_catalog.pg_namespace AS pn ON pn.oid = p.pronamespace
ORDER BY 1, 2
