-- The functions of the given names, to judge what a query's calls do and what the bodies of
-- the user's functions call in turn (src/effects.rs, src/effects/reach.rs).
-- $1: text[] of function names (proname), as a plan, a query's text or a function's body shows
-- them. Returns: schema, name, volatility (provolatile: i, s or v), the extension the function
-- belongs to (or null), whether an unqualified call finds it (pg_function_is_visible), the
-- language's name, and the body of a SQL or PL/pgSQL function (null in any other language: a C
-- function's prosrc is its symbol).
-- A SQL-standard body (BEGIN ATOMIC or RETURN, PostgreSQL 14+) leaves prosrc empty and is kept
-- parsed in prosqlbody, a column 13 lacks: pg_get_functiondef deparses it on every version, with
-- the CREATE FUNCTION header, whose only calls are the function's own name, type names and
-- argument defaults (which a call does evaluate).
-- Minimum server version: 11 (prokind; pg_get_functiondef refuses an aggregate, so only plain
-- functions and procedures are deparsed).
SELECT n.nspname::text AS schema,
       p.proname::text AS name,
       p.provolatile::text AS volatility,
       e.extname::text AS extension,
       pg_function_is_visible(p.oid) AS visible,
       l.lanname::text AS language,
       CASE
           WHEN l.lanname NOT IN ('sql', 'plpgsql') THEN NULL
           WHEN p.prosrc = '' AND p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid)
           ELSE p.prosrc
       END AS body
FROM pg_proc AS p
JOIN pg_namespace AS n ON n.oid = p.pronamespace
JOIN pg_language AS l ON l.oid = p.prolang
LEFT JOIN pg_depend AS d
       ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
      AND d.refclassid = 'pg_extension'::regclass
LEFT JOIN pg_extension AS e ON e.oid = d.refobjid
WHERE p.proname = ANY ($1)
