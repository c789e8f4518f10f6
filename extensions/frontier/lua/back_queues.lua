-- include: util, authority, ready_heap
-- Back queues: each IP's records. Discovery records sit in one lane per score bucket
-- (CFG.lanes of them, lane 0 = the best), FIFO within a lane, and the IP's next
-- discovery fetch is the head of its best non-empty lane: within an IP the best-scored
-- URL goes first (invariant 8) at the price of one list key per lane in use, not bytes
-- per URL. Re-crawl records ("R|" + record) have their own back queue per IP (pop_back
-- splits the IP's fetches).
-- Keys: F.bq .. ip (lane 0), F.bq .. ip .. '/' .. lane, F.rq .. ip (LPUSH, LPOP, LLEN);
-- F.ip .. ip field rcredit; K.active (SADD on requeue); K.stats (queued, recrawl_queued,
-- lane_<L>, lanes_counted); K.leases, K.lease_data (return_lease).
-- Marks (admit.lua): "P|" a probe, "C|" a URL charged to a catch-all (traps.lua), "F|"
-- one counted against its path's facet cap (records.FACET_MARK).
local PROBE_MARK = 'P|'
local CATCH_MARK = 'C|'
local FACET_MARK = 'F|'

-- Discovery records per lane over all of the shard's IPs, K.stats field lane_<L>: a
-- lane's depth in one HGET, where LLEN over every IP would not scale (100,000 IPs). A
-- record entering a lane is counted where its key is chosen (back_of: one push each),
-- one leaving where it is popped; the call's tally is written once per lane by
-- flush_lanes (router.lua's refill, which every entry script runs after its last queue
-- change). The counts are exact only from a moment the back queues were all empty, which
-- lanes_counted marks: a crawl queued before the counters starts counting at the first
-- script that finds no IP holding a back queue (records in a back queue keep their IP in
-- K.active: recycle removes only a drained IP).
local LANES_MARKED = redis.call('HEXISTS', K.stats, 'lanes_counted') == 1
local LANES_COUNTED = LANES_MARKED or redis.call('SCARD', K.active) == 0
local LANE_DELTA = {}

local function count_lane(lane, by)
  LANE_DELTA[lane] = (LANE_DELTA[lane] or 0) + by
end

local function flush_lanes()
  if not LANES_COUNTED then return end
  for lane, by in pairs(LANE_DELTA) do stat('lane_' .. lane, by) end
  LANE_DELTA = {}
  if not LANES_MARKED then
    redis.call('HSET', K.stats, 'lanes_counted', 1)
    LANES_MARKED = true
  end
end

local function is_recrawl(rec)
  return string.sub(rec, 1, 2) == 'R|'
end

local function lane_key(ip, lane)
  if lane == 0 then return F.bq .. ip end  -- the pre-lane name: old crawls resume
  return F.bq .. ip .. '/' .. lane
end

-- The key a record goes to; the caller pushes it there (counted as entering its lane).
local function back_of(ip, rec, lane)
  if is_recrawl(rec) then return F.rq .. ip end
  lane = tonumber(lane) or 0
  count_lane(lane, 1)
  return lane_key(ip, lane)
end

-- The lane of a front queue's records when their score is not known (parked hosts,
-- front-queue entries of a crawl queued before lanes): the lane its bucket starts at.
local function lane_of_prio(prio)
  return math.floor(tonumber(prio) * CFG.lanes / #CFG.weights)
end

local function pop_discovery(ip)
  for lane = 0, CFG.lanes - 1 do
    local rec = redis.call('LPOP', lane_key(ip, lane))
    if rec then
      count_lane(lane, -1)
      return rec
    end
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

-- A lease no worker will ack (its worker died: reclaimed; its reply was lost: given back)
-- goes: out of K.leases and K.lease_data, its record back at the head of its queue, its
-- hold on the IP ended. Returns end_hold's answer ('1' still downloading or never sent,
-- '2' fetched, nil): whether the IP is charged is the caller's.
local function return_lease(ip, id)
  local entry = redis.call('HGET', K.lease_data, id)
  redis.call('ZREM', K.leases, id)
  redis.call('HDEL', K.lease_data, id)
  if entry then
    local _, rec = split_first(entry)
    requeue(ip, rec)
  end
  return end_hold(ip, id)
end

-- The IP's next record. When both of its queues hold work, re-crawls get
-- CFG.recrawl_share of the fetches: a per-IP credit grows by the share at each
-- contested pick and a re-crawl spends 1, so the split is exact and smooth (share
-- 0.5 alternates) and nothing accrues while one queue is empty (work-conserving).
local function pop_record(ip)
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

-- The IP's next record, whole (authority.lua: queued without the IP's home authority).
local function pop_back(ip)
  local rec = pop_record(ip)
  if rec then return restore_authority(ip, rec) end
  return nil
end
