-- Audit: prepared transactions (two-phase commit) of the audited database still waiting for
-- COMMIT or ROLLBACK PREPARED. A prepared transaction holds the xmin horizon of its own database
-- only, like a session.
-- Returns one row per prepared transaction: gid, database_name, owner_name, xid_age_xids,
-- prepared_age_seconds, locks (the relation locks it holds, "RowExclusiveLock on public.t").
-- A prepared transaction's locks belong to no backend: pg_locks shows them with a null pid and
-- the virtual transaction it had, which also holds the lock on its own transaction id.
-- Minimum server version: 13. Readable by any role.
SELECT p.gid,
       p.database::text AS database_name,
       p.owner::text AS owner_name,
       age(p.transaction)::int8 AS xid_age_xids,
       extract(epoch FROM now() - p.prepared)::float8 AS prepared_age_seconds,
       ARRAY(SELECT l.mode || ' on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
             FROM pg_locks x
             JOIN pg_locks l ON l.pid IS NULL
                            AND l.locktype = 'relation'
                            AND l.virtualtransaction = x.virtualtransaction
             JOIN pg_class c ON c.oid = l.relation
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE x.pid IS NULL
               AND x.locktype = 'transactionid'
               AND x.transactionid = p.transaction
               AND l.database = (SELECT d.oid FROM pg_database d
                                 WHERE d.datname = current_database())
             ORDER BY 1) AS locks
FROM pg_prepared_xacts p
WHERE p.database = current_database()
