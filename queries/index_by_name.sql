-- An existing index found by name (as regclass input, optionally schema-qualified), for
-- --drop-index: its size and the names plans use for it.
-- $1: the index name as the user wrote it.
-- Returns: size_bytes (summed over its partition tree, as in index_facts.sql), relname (the
-- bare name EXPLAIN shows), plan_names (relname and, for a partitioned index, every
-- partition's index).
-- pg_partition_tree returns nothing for an index outside any partition tree, hence the
-- relation's own size and name first.
-- Minimum server version: 12 (pg_partition_tree).
SELECT CASE WHEN c.relkind = 'I'
            THEN (SELECT coalesce(sum(pg_relation_size(t.relid)), 0)
                  FROM pg_partition_tree(c.oid) AS t)
            ELSE pg_relation_size(c.oid)
       END::float8 AS size_bytes,
       c.relname::text AS relname,
       ARRAY[c.relname::text]
         || ARRAY(SELECT p.relname::text
                  FROM pg_partition_tree(c.oid) AS t
                  JOIN pg_class AS p ON p.oid = t.relid
                  WHERE t.relid <> c.oid
                  ORDER BY t.level, p.relname) AS plan_names
FROM pg_class AS c
JOIN pg_index AS i ON i.indexrelid = c.oid
WHERE c.oid = to_regclass($1)
  AND c.relkind IN ('i', 'I')
