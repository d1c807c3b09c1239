-- Compare and explain -d under --allow-writes: every sequence's last value in this database,
-- read before and after the runs, since nextval/setval are not transactional and a rollback
-- leaves a sequence where the runs moved it.
-- Returns one row per sequence the role may read: sequence_name (schema.name, quoted as
-- needed), last_value (NULL when never read since creation or restart).
-- pg_sequences.last_value takes an ACCESS SHARE lock on each sequence, bounded by the
-- transaction's lock_timeout; sequences the role may not read are left out (it shows NULL and
-- reports nothing).
-- Minimum server version: 13.
SELECT format('%I.%I', schemaname, sequencename) AS sequence_name,
       last_value
FROM pg_sequences
WHERE has_sequence_privilege(format('%I.%I', schemaname, sequencename), 'SELECT,USAGE')
ORDER BY 1
LIMIT 10000
