-- The memory settings of the transaction that ran the query (role, database and session
-- settings included), for `explain -d`'s spill findings.
-- Returns one row: work_mem_kb, hash_mem_multiplier.
-- Minimum server version: 13 (hash_mem_multiplier).
SELECT (SELECT setting::float8 FROM pg_settings WHERE name = 'work_mem') AS work_mem_kb,
       current_setting('hash_mem_multiplier')::float8 AS hash_mem_multiplier
