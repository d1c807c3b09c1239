-- The events story: a dashboard query for pending events, and three candidate indexes.
--
-- 500,000 events; `status` has four values and 'pending' is 70% of the rows; `created_at` rises
-- with the id; `tenant_id` spreads events over 1,000 tenants. Deterministic: the same rows on
-- every run and every server version. Used by `pgplan demo` and by the fixture recorder.
CREATE TABLE events (
    id         bigint      PRIMARY KEY,
    tenant_id  integer     NOT NULL,
    status     text        NOT NULL,
    created_at timestamptz NOT NULL,
    payload    text        NOT NULL
);

INSERT INTO events (id, tenant_id, status, created_at, payload)
SELECT i,
       (i::bigint * 7919) % 1000,
       CASE
           WHEN (i::bigint * 37) % 100 < 70 THEN 'pending'
           WHEN (i::bigint * 37) % 100 < 90 THEN 'done'
           WHEN (i::bigint * 37) % 100 < 97 THEN 'failed'
           ELSE 'cancelled'
       END,
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute',
       md5(i::text) || md5((i + 1)::text) || left(md5((i + 2)::text), 18)
FROM generate_series(1, 500000) AS i;

VACUUM (ANALYZE) events;
