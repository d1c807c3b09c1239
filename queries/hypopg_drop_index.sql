-- Removes one hypothetical index this backend created. $1: its oid. Needs hypopg (1.1+).
SELECT hypopg_drop_index($1)
