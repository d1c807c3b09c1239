-- Size and shape of one index on one table.
-- $1: the table as regclass input (as written in CREATE INDEX ... ON table); $2: the index name
-- as stored (folded to lower case unless it was quoted).
-- Returns: size_bytes (summed over its partition tree: a partitioned index has no storage of
-- its own, its partitions' indexes do), has_expressions (the planner has no statistics on an
-- expression index until ANALYZE), plan_names (the bare names plans show for
-- it: the index itself and, on a partitioned table, every partition's index), check_xmin
-- (pg_index.indcheckxmin: the build met broken HOT chains, so no query in the transaction that
-- built it may use it).
-- pg_partition_tree returns nothing for an index outside any partition tree, hence the
-- relation's own size and name first.
-- Minimum server version: 12 (pg_partition_tree).
SELECT CASE WHEN c.relkind = 'I'
            THEN (SELECT coalesce(sum(pg_relation_size(t.relid)), 0)
                  FROM pg_partition_tree(i.indexrelid) AS t)
            ELSE pg_relation_size(i.indexrelid)
       END::float8 AS size_bytes,
       i.indexprs IS NOT NULL AS has_expressions,
       ARRAY[c.relname::text]
         || ARRAY(SELECT p.relname::text
                  FROM pg_partition_tree(i.indexrelid) AS t
                  JOIN pg_class AS p ON p.oid = t.relid
                  WHERE t.relid <> i.indexrelid
                  ORDER BY t.level, p.relname) AS plan_names,
       i.indcheckxmin AS check_xmin
FROM pg_index AS i
JOIN pg_class AS c ON c.oid = i.indexrelid
WHERE i.indrelid = $1::regclass
  AND c.relname = $2
