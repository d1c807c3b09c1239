-- Audit: queries a standby cancelled in the audited database because WAL replay needed what
-- they held (pg_stat_database_conflicts), by cause, since the counters were reset. Zeros on a
-- primary, which has no replay.
-- Returns one row: confl_tablespace, confl_lock, confl_snapshot, confl_bufferpin,
-- confl_deadlock, confl_active_logicalslot.
-- confl_active_logicalslot appeared in 16 (logical decoding on standbys); null before.
-- Minimum server version: 13. Readable by any role.
SELECT c.confl_tablespace::int8 AS confl_tablespace,
       c.confl_lock::int8 AS confl_lock,
       c.confl_snapshot::int8 AS confl_snapshot,
       c.confl_bufferpin::int8 AS confl_bufferpin,
       c.confl_deadlock::int8 AS confl_deadlock,
       {{confl_active_logicalslot}} AS confl_active_logicalslot
FROM pg_stat_database_conflicts c
WHERE c.datname = current_database()
