-- Info: how many of the database's tables the connected role may build and drop indexes on.
-- CREATE INDEX and DROP INDEX need ownership of the table ("must be owner of table"), which a
-- role has as a member of the owner's role with its privileges (pg_has_role USAGE), or as a
-- superuser; SELECT or any other grant is not enough. Returns one row: tables (ordinary and
-- partitioned tables and materialized views outside the system, TOAST and temporary schemas),
-- owned (of those, the ones the role owns), other_owners and other_owner_tables (the roles
-- owning the others and how many each, most tables first, at most three), pairwise.
-- Minimum server version: 13. Readable by any role.
WITH t AS (
    SELECT c.relowner, pg_has_role(c.relowner, 'USAGE') AS owned
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p', 'm')
      AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname !~ '^pg_(toast|temp_)'
),
others AS (
    SELECT pg_get_userbyid(relowner)::text AS owner, count(*)::int8 AS tables
    FROM t
    WHERE NOT owned
    GROUP BY relowner
    ORDER BY count(*) DESC, 1
    LIMIT 3
)
SELECT (SELECT count(*) FROM t)::int8 AS tables,
       (SELECT count(*) FROM t WHERE owned)::int8 AS owned,
       ARRAY(SELECT owner FROM others ORDER BY tables DESC, owner)::text[] AS other_owners,
       ARRAY(SELECT tables FROM others ORDER BY tables DESC, owner)::int8[] AS other_owner_tables
