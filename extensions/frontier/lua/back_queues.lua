-- include: util
-- Back queues: each IP's records. Discovery records sit in one lane per score bucket
-- (CFG.lanes of them, lane 0 = the best), FIFO within a lane, and the IP's next
-- discovery fetch is the head of its best non-empty lane: within an IP the best-scored
-- URL goes first (invariant 8) at the price of one list key per lane in use, not bytes
-- per URL.
-- Re-crawl records ("R|" + record) have their own back queue per IP, so the IP's
-- fetches can be split between them (pop_back). "P|" marks a closed pattern's probe.
-- Keys: F.bq .. ip (lane 0), F.bq .. ip .. '/' .. lane, F.rq .. ip (LPUSH, LPOP, LLEN);
-- F.ip .. ip field rcredit; K.active (SADD on requeue); K.stats (queued, recrawl_queued).
local PROBE_MARK = 'P|'

local function is_recrawl(rec)
  return string.sub(rec, 1, 2) == 'R|'
end

local function lane_key(ip, lane)
  if lane == 0 then return F.bq .. ip end  -- the pre-lane name: old crawls resume
  return F.bq .. ip .. '/' .. lane
end

local function back_of(ip, rec, lane)
  if is_recrawl(rec) then return F.rq .. ip end
  return lane_key(ip, tonumber(lane) or 0)
end

-- The lane of a front queue's records when their score is not known (parked hosts,
-- front-queue entries of a crawl queued before lanes): the lane its bucket starts at.
local function lane_of_prio(prio)
  return math.floor(tonumber(prio) * CFG.lanes / #CFG.weights)
end

local function pop_discovery(ip)
  for lane = 0, CFG.lanes - 1 do
    local rec = redis.call('LPOP', lane_key(ip, lane))
    if rec then return rec end
  end
  return nil
end

local function has_discovery(ip)
  for lane = 0, CFG.lanes - 1 do
    if redis.call('EXISTS', lane_key(ip, lane)) == 1 then return true end
  end
  return false
end

-- Put a record back at the head of its IP's queue (a reclaimed or released lease):
-- the head of the best lane, since it had been chosen first.
local function requeue(ip, rec)
  redis.call('LPUSH', back_of(ip, rec, 0), rec)
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
  if recrawls == 0 then return pop_discovery(ip) end
  local take_recrawl = true
  if has_discovery(ip) then
    local credit = num(redis.call('HGET', key, 'rcredit'), 0) + CFG.recrawl_share
    take_recrawl = credit >= 1
    if take_recrawl then credit = credit - 1 end
    redis.call('HSET', key, 'rcredit', credit)
  end
  if not take_recrawl then return pop_discovery(ip) end
  stat('recrawl_queued', -1)
  return redis.call('LPOP', F.rq .. ip)
end
