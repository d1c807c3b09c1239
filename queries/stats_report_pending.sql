-- Advise, before 15: a statement whose transaction end lets this backend send its pending
-- statistics to the collector (at most once every 500 ms, PGSTAT_STAT_INTERVAL), and which
-- drops any statistics snapshot the session holds. Returns one row, one void column.
-- Minimum server version: 13 (on 15+ stats_force_next_flush.sql does this without waiting).
SELECT pg_stat_clear_snapshot()
