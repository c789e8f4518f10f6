-- include: util
-- Back queues: each IP's records, in the order the router gave them. Re-crawl records
-- ("R|" + record) and discovery records have a back queue each per IP, so the IP's
-- fetches can be split between them (pop_back).
-- Keys: F.bq .. ip and F.rq .. ip (LPUSH, LPOP, LLEN); F.ip .. ip field rcredit;
-- K.active (SADD on requeue); K.stats (queued, recrawl_queued).

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
