-- The audit's role: read-only by construction, and pg_monitor lets it read every session's
-- activity (for the xmin horizon), replication slots and statistics. Run on the primary; the
-- role reaches the replicas through replication.
CREATE ROLE pgplan_audit LOGIN PASSWORD 'change-me' IN ROLE pg_monitor;
-- In every database the audit reads: CONNECT is all it needs (catalogs are readable by all).
GRANT CONNECT ON DATABASE app TO pgplan_audit;
