-- Shows a hidden index to this backend's planner again. $1: the index as regclass input.
-- Needs hypopg 1.4+.
SELECT hypopg_unhide_index(to_regclass($1))
