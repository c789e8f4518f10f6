-- include: util
-- Ready heap: IP -> next_fetch_at, the earliest politely allowed start (invariant 2),
-- with delay(IP) = max(configured, robots Crawl-delay, operator override, adaptive,
-- throttle) and backoff/quarantine in blocked_until (outcome.lua writes those).
-- Keys: K.ready (ZSCORE, ZADD); F.ip .. ip read: crawl_delay, override, adaptive,
-- throttle, last_end, last_start, blocked_until, inflight.

-- The IP's delay without its 429/503 throttle (the throttle is a multiple of it), and
-- the throttle (0 when none).
local function delay_parts(ip)
  local h = redis.call('HMGET', F.ip .. ip, 'crawl_delay', 'override', 'adaptive', 'throttle')
  local d = CFG.delay
  for i = 1, 3 do
    local v = tonumber(h[i])
    if v and v > d then d = v end
  end
  return d, num(h[4], 0)
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
  return math.max(t, num(h[3], 0))
end

-- Put ip on the ready heap unless it is at its in-flight cap or already there.
local function schedule_ip(ip)
  if num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) >= CFG.ip_concurrency then return end
  if redis.call('ZSCORE', K.ready, ip) then return end
  redis.call('ZADD', K.ready, next_fetch_at(ip), ip)
end

-- After a fetch, a drop or a reclaimed lease: the IP keeps its back queue and
-- goes back on the ready heap at next_fetch_at even when drained. The back queue
-- is recycled only when the IP comes due with nothing queued (router.lua's recycle,
-- called by lease.lua), so a slot stays busy for the whole fetch + delay period,
-- as in Mercator.
local function settle(ip)
  schedule_ip(ip)
end
