-- Audit: foreign keys whose referencing or referenced table is in scope.
-- Returns one row per foreign key: constraint_name, table_oid, schema_name, table_name,
-- referenced_table_oid, referenced_schema, referenced_table, attnums (conkey), column_names,
-- referenced_index_oid (conindid), inherited (a partition's copy of a parent's key).
-- Parameters: as audit_tables.sql ($1 schemas, $2 excluded schemas, $3/$4 tables).
-- Minimum server version: 13. Readable by any role.
WITH in_scope AS (
    SELECT c.oid
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'm', 'p')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname !~ '^pg_(toast|temp_)'
      AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[]))
      AND NOT (n.nspname = ANY($2::text[]))
      AND (cardinality($4::text[]) = 0
           OR EXISTS (SELECT 1 FROM unnest($3::text[], $4::text[]) AS f(schema_name, table_name)
                      WHERE f.table_name = c.relname AND f.schema_name IN ('', n.nspname)))
)
SELECT con.conname::text AS constraint_name,
       con.conrelid AS table_oid,
       n.nspname::text AS schema_name,
       c.relname::text AS table_name,
       con.confrelid AS referenced_table_oid,
       fn.nspname::text AS referenced_schema,
       fc.relname::text AS referenced_table,
       con.conkey::int2[] AS attnums,
       ARRAY(SELECT a.attname::text
             FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, position)
             JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
             ORDER BY k.position) AS column_names,
       con.conindid AS referenced_index_oid,
       con.conparentid <> 0 AS inherited
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class fc ON fc.oid = con.confrelid
JOIN pg_namespace fn ON fn.oid = fc.relnamespace
WHERE con.contype = 'f'
  AND (con.conrelid IN (SELECT oid FROM in_scope) OR con.confrelid IN (SELECT oid FROM in_scope))
