-- HypoPG's estimate of a hypothetical index's size, in bytes.
-- $1: the hypothetical index's oid. Needs the hypopg extension (1.1+).
SELECT hypopg_relation_size($1)::float8 AS size_bytes
