-- Hides an existing index from this backend's planner (HypoPG), for --drop-index --hypothetical.
-- Backend-local, not transactional: pgplan unhides it before the transaction ends.
-- $1: the index as regclass input. Returns: whether it was hidden. Needs hypopg 1.4+.
SELECT hypopg_hide_index(to_regclass($1))
