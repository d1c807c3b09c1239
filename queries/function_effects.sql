-- The functions of the given names, to judge what a query's calls do (src/effects.rs).
-- $1: text[] of function names as the plan shows them (proname). Returns: schema, name,
-- volatility (provolatile: i, s or v), the extension the function belongs to (or null), and
-- whether an unqualified call finds it (pg_function_is_visible).
-- Minimum server version: 9.1 (pg_extension).
SELECT n.nspname::text AS schema,
       p.proname::text AS name,
       p.provolatile::text AS volatility,
       e.extname::text AS extension,
       pg_function_is_visible(p.oid) AS visible
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
LEFT JOIN pg_depend AS d
       ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      AND d.refclassid = 'pg_extension'::regclass
LEFT JOIN pg_extension AS e ON e.oid = d.refobjid
WHERE p.proname = ANY ($1)
