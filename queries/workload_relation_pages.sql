-- The tables' sizes on disk in blocks, to tell whether pgplan's representative writes grew them
-- (a rolled-back insert may extend a table; no rollback shrinks it).
-- $1: text[] of table names as regclass input. Returns: name (as given), pages (float8; NULL
-- when the name no longer resolves).
-- Minimum server version: 9.4 (to_regclass).
SELECT t.name,
       pg_relation_size(to_regclass(t.name))::float8
           / current_setting('block_size')::float8 AS pages
FROM unnest($1::text[]) AS t(name)
