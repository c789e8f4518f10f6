-- Frontier library: prepended to every entry script (after the generated key table K).
-- ARGV[1] is a JSON object: now (epoch s), cfg (settings), families (key prefixes),
-- plus the entry script's own arguments. Redis seeds math.random identically on
-- every call, so randomness comes from cfg.seed through a Park-Miller generator.
local A = cjson.decode(ARGV[1])
local NOW = tonumber(A.now)
local CFG = A.cfg
local F = A.families
local rng = CFG.seed % 2147483646 + 1

local function rand()
  rng = (rng * 16807) % 2147483647
  return rng / 2147483647
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

local function split_first(entry)
  local sep = string.find(entry, '|', 1, true)
  return string.sub(entry, 1, sep - 1), string.sub(entry, sep + 1)
end

local function stat(name, by)
  by = by or 1
  -- Lua prints -0 as "-0", which HINCRBY rejects.
  if by ~= 0 then redis.call('HINCRBY', K.stats, name, by) end
end

-- delay(IP) = max(configured, robots Crawl-delay, operator override, adaptive)
local function ip_delay(ip)
  local h = redis.call('HMGET', F.ip .. ip, 'crawl_delay', 'override', 'adaptive')
  local d = CFG.delay
  for i = 1, 3 do
    local v = tonumber(h[i])
    if v and v > d then d = v end
  end
  return d
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

-- Re-crawl records ("R|" + record) and discovery records have a back queue each per
-- IP, so the IP's fetches can be split between them (pop_back).
local function is_recrawl(rec)
  return string.sub(rec, 1, 2) == 'R|'
end

local function back_of(ip, rec)
  if is_recrawl(rec) then return F.rq .. ip end
  return F.bq .. ip
end

-- Put a record back at the head of its IP's queue (a reclaimed or released lease).
local function requeue(ip, rec)
  redis.call('LPUSH', back_of(ip, rec), rec)
  redis.call('SADD', K.active, ip)
  stat('queued', 1)
  if is_recrawl(rec) then stat('recrawl_queued', 1) end
end

-- The IP's next record. When both of its queues hold work, re-crawls get
-- CFG.recrawl_share of the fetches: a per-IP credit grows by the share at each
-- contested pick and a re-crawl spends 1, so the split is exact and smooth (share
-- 0.5 alternates) and nothing accrues while one queue is empty (work-conserving).
local function pop_back(ip)
  local key = F.ip .. ip
  local recrawls = redis.call('LLEN', F.rq .. ip)
  if recrawls == 0 then return redis.call('LPOP', F.bq .. ip) end
  local take_recrawl = true
  if redis.call('LLEN', F.bq .. ip) > 0 then
    local credit = num(redis.call('HGET', key, 'rcredit'), 0) + CFG.recrawl_share
    take_recrawl = credit >= 1
    if take_recrawl then credit = credit - 1 end
    redis.call('HSET', key, 'rcredit', credit)
  end
  if not take_recrawl then return redis.call('LPOP', F.bq .. ip) end
  stat('recrawl_queued', -1)
  return redis.call('LPOP', F.rq .. ip)
end

-- Put ip on the ready heap unless it is at its in-flight cap or already there.
local function schedule_ip(ip)
  if num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) >= CFG.ip_concurrency then return end
  if redis.call('ZSCORE', K.ready, ip) then return end
  redis.call('ZADD', K.ready, next_fetch_at(ip), ip)
end

-- Weighted random choice among non-empty front queues: low priorities are
-- chosen less often but never starved.
local function pick_front()
  local total, lens = 0, {}
  for p = 1, #CFG.weights do
    lens[p] = redis.call('LLEN', F.front .. (p - 1))
    if lens[p] > 0 then total = total + CFG.weights[p] end
  end
  if total == 0 then return nil end
  local r = rand() * total
  local last = nil
  for p = 1, #CFG.weights do
    if lens[p] > 0 then
      last = p - 1
      r = r - CFG.weights[p]
      if r < 0 then return last end
    end
  end
  return last
end

-- Router: give free back queues to new IPs from the front queues. Bounded per
-- call so one script never holds Redis for long; every lease/report refills again.
local function refill()
  local active = redis.call('SCARD', K.active)
  local moved = 0
  while active < CFG.back_queues and moved < CFG.refill_batch do
    local p = pick_front()
    if p == nil then break end
    local ip, rec = split_first(redis.call('LPOP', F.front .. p))
    redis.call('RPUSH', back_of(ip, rec), rec)
    if redis.call('SADD', K.active, ip) == 1 then
      active = active + 1
      schedule_ip(ip)
    end
    moved = moved + 1
  end
end

-- Sticky router: an IP that holds a back queue gets its URLs directly.
local function route(ip, prio, rec)
  if redis.call('SISMEMBER', K.active, ip) == 1 then
    redis.call('RPUSH', back_of(ip, rec), rec)
    schedule_ip(ip)
  else
    redis.call('RPUSH', F.front .. prio, ip .. '|' .. rec)
  end
end

-- After a fetch, a drop or a reclaimed lease: the IP keeps its back queue and
-- goes back on the ready heap at next_fetch_at even when drained. The back queue
-- is recycled only when the IP comes due with nothing queued (see lease.lua),
-- so a slot stays busy for the whole fetch + delay period, as in Mercator.
local function settle(ip)
  schedule_ip(ip)
end

-- An IP came due with an empty back queue: give the back queue to another IP.
-- Its politeness state in F.ip stays (invariant 3).
local function recycle(ip)
  if num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) > 0 then return end
  if redis.call('SREM', K.active, ip) == 1 then refill() end
end

local function counters()
  local queued = num(redis.call('HGET', K.stats, 'queued'), 0)
  return {queued = queued, leased = redis.call('ZCARD', K.leases),
          recrawl_queued = num(redis.call('HGET', K.stats, 'recrawl_queued'), 0),
          pending_hosts = redis.call('ZCARD', K.pending_hosts)}
end
