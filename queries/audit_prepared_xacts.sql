-- Audit: prepared transactions (two-phase commit) of the audited database still waiting for
-- COMMIT or ROLLBACK PREPARED. A prepared transaction holds the xmin horizon of its own database
-- only, like a session.
-- Returns one row per prepared transaction: gid, database_name, owner_name, xid_age_xids,
-- prepared_age_seconds.
-- Minimum server version: 13. Readable by any role.
SELECT p.gid,
       p.database::text AS database_name,
       p.owner::text AS owner_name,
       age(p.transaction)::int8 AS xid_age_xids,
       extract(epoch FROM now() - p.prepared)::float8 AS prepared_age_seconds
FROM pg_prepared_xacts p
WHERE p.database = current_database()
