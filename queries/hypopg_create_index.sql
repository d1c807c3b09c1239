-- Creates a hypothetical index (HypoPG): nothing is built, only this backend's planner sees it.
-- It lives in backend memory, not in a transaction: pgplan drops it before the transaction ends.
-- $1: a CREATE INDEX statement. Returns: indexrelid (oid), indexname (the name plans show).
-- Needs the hypopg extension (1.1+).
SELECT indexrelid, indexname::text FROM hypopg_create_index($1)
