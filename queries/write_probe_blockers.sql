-- Workload: what would make pgplan's representative write (a DELETE and re-INSERT of one row
-- of $1, rolled back) do more than write the row and its index entries: user triggers on the
-- table (not the internal ones of foreign keys), rules other than a view's _RETURN, and
-- publications that publish it (a rolled-back write is not decoded, but a trigger may reach
-- outside: dblink, a NOTIFY, a sequence). Returns one row per blocker: kind ('trigger', 'rule'
-- or 'publication') and name. Minimum server version: 13.
SELECT 'trigger' AS kind, t.tgname::text AS name
FROM pg_catalog.pg_trigger AS t
WHERE t.tgrelid = to_regclass($1::text) AND NOT t.tgisinternal
UNION ALL
SELECT 'rule', r.rulename::text
FROM pg_catalog.pg_rewrite AS r
WHERE r.ev_class = to_regclass($1::text) AND r.rulename <> '_RETURN'
UNION ALL
SELECT 'publication', p.pubname::text
FROM pg_catalog.pg_publication AS p
WHERE p.puballtables
   OR EXISTS (SELECT FROM pg_catalog.pg_publication_rel AS pr
              WHERE pr.prpubid = p.oid AND pr.prrelid = to_regclass($1::text))
ORDER BY 1, 2
