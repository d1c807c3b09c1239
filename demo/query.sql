SELECT id, created_at
FROM events
WHERE status = 'pending'
ORDER BY created_at DESC
LIMIT 50;
