-- A tenant's activity feed: its 20 newest events.
-- calls: 20000
SELECT id, status, created_at
FROM events
WHERE tenant_id = $1
ORDER BY created_at DESC
LIMIT 20
