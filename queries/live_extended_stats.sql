-- The extended statistics objects (CREATE STATISTICS) on the tables a plan reads.
-- $1: text[] of table names as regclass input.
-- Returns per object: table (schema-qualified, quoted as needed), name (schema-qualified),
-- kinds (stxkind: d ndistinct, f dependencies, m mcv, e expressions), columns (the key
-- columns' names in order; expressions, 14+, are not listed).
-- Minimum server version: 13.
SELECT format('%I.%I', tn.nspname, c.relname) AS table_name,
       format('%I.%I', sn.nspname, x.stxname) AS name,
       x.stxkind::text[] AS kinds,
       ARRAY(SELECT a.attname::text
             FROM unnest(x.stxkeys) WITH ORDINALITY AS k(attnum, position)
             JOIN pg_attribute AS a ON a.attrelid = x.stxrelid AND a.attnum = k.attnum
             ORDER BY k.position) AS columns
FROM unnest($1::text[]) AS t(name)
JOIN pg_statistic_ext AS x ON x.stxrelid = to_regclass(t.name)
JOIN pg_class AS c ON c.oid = x.stxrelid
JOIN pg_namespace AS tn ON tn.oid = c.relnamespace
JOIN pg_namespace AS sn ON sn.oid = x.stxnamespace
ORDER BY 1, 2
