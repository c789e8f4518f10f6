-- include: util, back_queues, router
-- A host's resolution finished: route its parked requests (A.ip set), retry
-- later (A.retry_at), or drop them (A.drop) after repeated failures.
local key = F.pending .. A.host

-- "prio|lane|rec" ('' lane: an explicit priority's); parked before lanes: "prio|rec".
local function parse_pending(entry)
  local prio, rest = split_first(entry)
  local lane, rec = string.match(rest, '^(%d*)|(.*)$')
  if not lane then return prio, nil, rest end
  return prio, tonumber(lane), rec
end

local moved = 0
if A.ip and A.ip ~= '' then
  for _, entry in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local prio, lane, rec = parse_pending(entry)
    route(A.ip, prio, rec, lane)
    moved = moved + 1
  end
  redis.call('DEL', key)
  redis.call('ZREM', K.pending_hosts, A.host)
  refill()
elseif A.drop then
  local recrawls = 0
  for _, entry in ipairs(redis.call('LRANGE', key, 0, -1)) do
    local _, _, rec = parse_pending(entry)
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
