-- include: util, authority, front_queues, back_queues, ready_heap
-- Router: sticky IP -> back queue. An IP that holds a back queue (at most
-- CFG.back_queues at once) gets its records directly; others wait in a front queue
-- until a back queue is free. A newly routed IP goes on the ready heap.
-- Keys: K.active (SCARD, SADD, SISMEMBER, SREM); F.front .. p (RPUSH, LPOP: "ip|lane|rec");
-- the IP's lanes and F.rq .. ip (RPUSH); F.ip .. ip field inflight (read).

-- Give free back queues to new IPs from the front queues. Bounded per
-- call so one script never holds Redis for long; every lease/report refills again.
-- Every entry script that moves records runs it last: it writes the lane counters.
local function refill()
  local active = redis.call('SCARD', K.active)
  local moved = 0
  while active < CFG.back_queues and moved < CFG.refill_batch do
    local p = pick_front()
    if p == nil then break end
    local ip, rest = split_first(redis.call('LPOP', F.front .. p))
    local lane, rec = string.match(rest, '^(%d+)|(.*)$')
    if not lane then lane, rec = lane_of_prio(p), rest end  -- queued before lanes
    redis.call('RPUSH', back_of(ip, rec, lane), rec)
    if redis.call('SADD', K.active, ip) == 1 then
      active = active + 1
      schedule_ip(ip)
    end
    moved = moved + 1
  end
  flush_lanes()
end

-- Sticky router: an IP that holds a back queue gets its URLs directly, in their lane
-- (nil: the lane of the priority); front-queue entries are "ip|lane|record".
local function route(ip, prio, rec, lane)
  lane = lane or lane_of_prio(prio)
  rec = elide_authority(ip, rec)
  if redis.call('SISMEMBER', K.active, ip) == 1 then
    redis.call('RPUSH', back_of(ip, rec, lane), rec)
    schedule_ip(ip)
  else
    redis.call('RPUSH', F.front .. prio, ip .. '|' .. lane .. '|' .. rec)
  end
end

-- An IP came due with an empty back queue: give the back queue to another IP.
-- Its politeness state in F.ip stays (invariant 3).
local function recycle(ip)
  if num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) > 0 then return end
  if redis.call('SREM', K.active, ip) == 1 then refill() end
end
