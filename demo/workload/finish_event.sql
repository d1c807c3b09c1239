-- A worker marks an event done, all day long.
-- calls: 200000
UPDATE events SET status = 'done' WHERE id = $1
