-- A relation name as written, resolved through the search_path to schema.table.
-- $1: the name as regclass input. Returns at most one row: name (text, quoted as needed).
-- Minimum server version: 9.4.
SELECT format('%I.%I', n.nspname, c.relname) AS name
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass($1)
