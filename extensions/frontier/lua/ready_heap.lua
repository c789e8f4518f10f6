-- include: util
-- Ready heap: IP -> next_fetch_at, the earliest politely allowed start (invariant 2),
-- with delay(IP) = max(configured, robots Crawl-delay, operator override, adaptive,
-- throttle) and backoff/quarantine in blocked_until (outcome.lua writes those).
-- Keys: K.ready (ZSCORE, ZADD); F.ip .. ip read: crawl_delay, override, adaptive,
-- throttle, last_end, last_start, blocked_until, inflight; K.lease_seq, K.leases,
-- K.lease_dl (start_hold, end_hold).
-- "ip" is the politeness key: the IP, or "<ip>@<host>" inside FRONTIER_HOST_IP_NETWORKS
-- (admission/politeness_key.py), which lives in its IP's shard: what an operator set on
-- the IP itself (override, blocked_until: admin.py) holds for each of its hosts too.

-- The IP of a per-host key; nil for a bare IP.
local function ip_part(key)
  local at = string.find(key, '@', 1, true)
  if at then return string.sub(key, 1, at - 1) end
  return nil
end

-- An operator field of a per-host key's IP (0 for a bare IP: its own state has it).
local function ip_wide(key, field)
  local ip = ip_part(key)
  if not ip then return 0 end
  return num(redis.call('HGET', F.ip .. ip, field), 0)
end

-- The IP's delay without its 429/503 throttle (the throttle is a multiple of it), and
-- the throttle (0 when none).
local function delay_parts(ip)
  local h = redis.call('HMGET', F.ip .. ip, 'crawl_delay', 'override', 'adaptive', 'throttle')
  local d = CFG.delay
  for i = 1, 3 do
    local v = tonumber(h[i])
    if v and v > d then d = v end
  end
  return math.max(d, ip_wide(ip, 'override')), num(h[4], 0)
end

local function ip_delay(ip)
  local d, throttle = delay_parts(ip)
  return math.max(d, throttle)
end

-- Earliest politely allowed start: delay counted from the end of the previous
-- fetch (and from the start of one still in flight when ip_concurrency > 1),
-- never before a backoff or quarantine ends.
local function next_fetch_at(ip)
  local h = redis.call('HMGET', F.ip .. ip, 'last_end', 'last_start', 'blocked_until')
  local last = math.max(num(h[1], 0), num(h[2], 0))
  local t = math.max(NOW, last + ip_delay(ip))
  return math.max(t, num(h[3], 0), ip_wide(ip, 'blocked_until'))
end

-- Put ip on the ready heap unless it is at its in-flight cap or already there.
local function schedule_ip(ip)
  if num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) >= CFG.ip_concurrency then return end
  if redis.call('ZSCORE', K.ready, ip) then return end
  redis.call('ZADD', K.ready, next_fetch_at(ip), ip)
end

-- A new lease's hold on its IP, from `start` (lease.lua, lease_ip.lua): its id
-- "<ip>#<seq>:<call>" (A.call, the lease call's token: a call whose reply the worker lost
-- gives its leases back by it, cancel_lease.lua), in K.leases until start + lease_ttl, in
-- K.lease_dl as downloading, counted in flight on the IP, its start the IP's last_start.
local function start_hold(ip, start)
  local id = ip .. '#' .. redis.call('INCR', K.lease_seq) .. (A.call and (':' .. A.call) or '')
  redis.call('HSET', K.lease_dl, id, 1)
  redis.call('ZADD', K.leases, start + CFG.lease_ttl, id)
  redis.call('HINCRBY', F.ip .. ip, 'inflight', 1)
  redis.call('HSET', F.ip .. ip, 'last_start', start)
  return id
end

-- A lease's hold on its IP ends (ack, release, reclaim): its K.lease_dl entry goes and
-- the IP's in-flight count drops. Returns what the entry was: '1' still downloading (or
-- never sent), '2' fetched and held until its ack (report.lua), nil when the lease held
-- nothing (its 'done' freed the IP, before holds until the ack existed).
local function end_hold(ip, id)
  local held = redis.call('HGET', K.lease_dl, id)
  if held then
    redis.call('HDEL', K.lease_dl, id)
    redis.call('HINCRBY', F.ip .. ip, 'inflight', -1)
  end
  return held
end

-- A lease dropped before the download: its start (lease.lua's last_start) must not space
-- the IP's next fetch. With nothing else in flight the last fetch's end does; each
-- dropped URL cost a whole delay before (a trap web's closed patterns, dropped at
-- dispatch, held a host to a third of its polite rate at FRONTIER_DELAY 0.25). With
-- another lease in flight (FRONTIER_IP_CONCURRENCY > 1) the start stays: never sooner.
local function uncharge(ip)
  local h = redis.call('HMGET', F.ip .. ip, 'inflight', 'last_end')
  if num(h[1], 0) > 0 then return end
  redis.call('HSET', F.ip .. ip, 'last_start', num(h[2], 0))
end

-- After a fetch, a drop or a reclaimed lease: the IP keeps its back queue and
-- goes back on the ready heap at next_fetch_at even when drained. The back queue
-- is recycled only when the IP comes due with nothing queued (router.lua's recycle,
-- called by lease.lua), so a slot stays busy for the whole fetch + delay period,
-- as in Mercator.
local function settle(ip)
  schedule_ip(ip)
end
