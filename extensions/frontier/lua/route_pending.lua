-- include: util, back_queues, router
-- A host's resolution finished: route its parked requests (A.ip set), retry
-- later (A.retry_at), or drop them (A.drop) after repeated failures.
local key = F.pending .. A.host
local moved = 0
if A.ip and A.ip ~= '' then
  for _, entry in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local prio, rec = split_first(entry)
    route(A.ip, prio, rec)
    moved = moved + 1
  end
  redis.call('DEL', key)
  redis.call('ZREM', K.pending_hosts, A.host)
  refill()
elseif A.drop then
  local recrawls = 0
  for _, entry in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local _, rec = split_first(entry)
    if is_recrawl(rec) then recrawls = recrawls + 1 end
  end
  stat('recrawl_queued', -recrawls)
  moved = redis.call('LLEN', key)
  redis.call('DEL', key)
  redis.call('ZREM', K.pending_hosts, A.host)
  stat('queued', -moved)
  stat('dns_dropped', moved)
else
  redis.call('ZADD', K.pending_hosts, A.retry_at, A.host)
end
local out = counters()
out.moved = moved
return cjson.encode(out)
