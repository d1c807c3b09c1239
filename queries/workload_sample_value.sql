-- One value of a column from a sampled row, for a parameter compared with a column that has
-- no statistics (never analyzed): a 1% block sample first, any row when that finds none.
-- Placeholders filled by db::workload with quoted identifiers: {{table}} (schema.table),
-- {{column}}.
-- Returns at most one row: value (text).
-- Minimum server version: 9.5 (TABLESAMPLE).
(SELECT {{column}}::text AS value FROM {{table}} TABLESAMPLE SYSTEM (1)
 WHERE {{column}} IS NOT NULL LIMIT 1)
UNION ALL
(SELECT {{column}}::text FROM {{table}} WHERE {{column}} IS NOT NULL LIMIT 1)
LIMIT 1
