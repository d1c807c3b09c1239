-- The current database's top statements from pg_stat_statements, by total execution time.
-- $1: how many (int8); $2: the fewest calls a statement must have (int8).
-- Returns: queryid (text), query (text), calls (float8), total_exec_ms (float8), and
-- all_exec_ms (float8): the execution time of every statement with enough calls, the top ones
-- or not, for the share of the time a workload leaves out.
-- Placeholder filled per version by db::workload: {{toplevel}} (14+ keeps nested statements
-- apart with `toplevel`; 13 has no such column and tracks top-level statements by default).
-- Only reads the view: never calls pg_stat_statements_reset().
-- Minimum server version: 13 (total_exec_time).
SELECT s.queryid::text AS queryid,
       s.query,
       sum(s.calls)::float8 AS calls,
       sum(s.total_exec_time)::float8 AS total_exec_ms,
       sum(sum(s.total_exec_time)) OVER ()::float8 AS all_exec_ms
FROM pg_stat_statements AS s
WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND {{toplevel}}
GROUP BY s.queryid, s.query
HAVING sum(s.calls) >= $2
ORDER BY sum(s.total_exec_time) DESC
LIMIT $1
