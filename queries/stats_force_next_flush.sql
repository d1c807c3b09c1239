-- Advise: asks this backend to flush its pending cumulative statistics (the index scans its
-- own measuring counted) when it next goes idle, whatever the time since its last flush, so the
-- next transaction's catalog read sees them. Returns one row, one void column.
-- Minimum server version: 15 (shared-memory statistics; pg_stat_force_next_flush).
SELECT pg_stat_force_next_flush()
