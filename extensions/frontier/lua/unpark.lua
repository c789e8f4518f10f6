-- include: util
-- Sharded frontier, step 2 of routing a resolved host (sharded.py): its first
-- A.count parked requests were admitted into the shard of its IP; drop them from
-- this shard (the host's). Only if they are still the head of the list (A.digest):
-- a worker that resolved the same host first has already moved them. Requests
-- parked meanwhile stay, and the host is due again at once so they follow.
local key = F.pending .. A.host
local head, parts = redis.call('LRANGE', key, 0, A.count - 1), {}
for i, entry in ipairs(head) do parts[i] = #entry .. ':' .. entry end
local moved = 0
if #head == A.count and redis.sha1hex(table.concat(parts)) == A.digest then
  redis.call('LTRIM', key, A.count, -1)
  moved = A.count
  stat('queued', -moved)
  stat('admitted', -moved)  -- counted again by the admit in the IP's shard
  stat('unparked', moved)
end
if redis.call('LLEN', key) == 0 then
  redis.call('ZREM', K.pending_hosts, A.host)
else
  redis.call('ZADD', K.pending_hosts, NOW, A.host)
end
local out = counters()
out.moved = moved
return cjson.encode(out)
