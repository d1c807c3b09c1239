-- The dashboard: the 50 newest pending events, on every page load.
-- calls: 50000
SELECT id, created_at
FROM events
WHERE status = 'pending'
ORDER BY created_at DESC
LIMIT 50
