-- What building an index on a table reads: the table's size and row estimate, summed over its
-- partition tree (a partitioned table has no storage of its own; its partitions are built too).
-- $1: the table as regclass input (as written in CREATE INDEX ... ON table).
-- Returns: table_bytes (pg_table_size: heap, TOAST, free space and visibility maps), tuples
-- (pg_class.reltuples, negative ones — never analyzed on 14+ — counted as 0).
-- Minimum server version: 12 (pg_partition_tree, which returns no row for a plain table: the
-- table itself is added).
SELECT coalesce(sum(pg_table_size(t.relid)), 0)::int8 AS table_bytes,
       coalesce(sum(greatest(c.reltuples, 0)), 0)::float8 AS tuples
  FROM (SELECT $1::text::regclass AS relid
         UNION
         SELECT relid FROM pg_partition_tree($1::text::regclass)) AS t
  JOIN pg_class AS c ON c.oid = t.relid
