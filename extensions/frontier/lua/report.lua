-- Download outcomes and acks, in order. A 'done' event ends a fetch: it charges
-- the IP's politeness clock, applies backoff, and unblocks the IP; the lease
-- stays until 'ack' (the page's outlinks are admitted), so a worker that dies
-- while parsing loses nothing.
-- A 'release' event hands back a lease that never reached the downloader (a worker
-- closing with leases buffered): the record returns to the head of its queue.
-- A.events: list of {t='done'|'ack'|'release', id, at, status, retry_after, timeout, latency,
-- block_until}

-- Per-host counters for operators (scrapy status --host): fetched and outcome class.
local function count_host(ev, status)
  if not ev.host then return end
  local class = 'error'
  if ev.timeout then class = 'timeout' elseif status > 0 then
    class = 'status_' .. math.floor(status / 100) .. 'xx'
  end
  redis.call('HINCRBY', K.host_stats, ev.host .. '|fetched', 1)
  redis.call('HINCRBY', K.host_stats, ev.host .. '|' .. class, 1)
  redis.call('HSET', K.host_stats, ev.host .. '|last_fetch', ev.at)
end

local function outcome(ip, ev)
  local key = F.ip .. ip
  local status = num(ev.status, 0)
  count_host(ev, status)
  if status == 429 or status == 503 then
    local errs = redis.call('HINCRBY', key, 'errs', 1)
    local wait = num(ev.retry_after, -1)
    if wait < 0 then
      wait = CFG.backoff_base * 2 ^ (errs - 1) * (0.5 + rand())
    end
    redis.call('HSET', key, 'blocked_until', ev.at + math.min(wait, CFG.backoff_max))
    stat('backoff')
  elseif ev.timeout then
    local n = redis.call('HINCRBY', key, 'timeouts', 1)
    if n >= CFG.quarantine_after then
      redis.call('HSET', key, 'blocked_until', ev.at + CFG.quarantine_s)
      redis.call('HDEL', key, 'timeouts')
      stat('quarantined')
    end
  elseif status > 0 then
    redis.call('HDEL', key, 'errs', 'timeouts')
  end
  if CFG.adaptive_factor > 0 and ev.latency then
    redis.call('HSET', key, 'adaptive', CFG.adaptive_factor * ev.latency)
  end
end

for _, ev in ipairs(A.events) do
  local ip = string.match(ev.id, '^(.*)#')
  if ev.t == 'done' then
    if redis.call('HDEL', K.lease_dl, ev.id) == 1 then
      redis.call('HINCRBY', F.ip .. ip, 'inflight', -1)
      redis.call('HSET', F.ip .. ip, 'last_end', ev.at)
      outcome(ip, ev)
      redis.call('ZADD', K.leases, 'XX', ev.at + CFG.lease_ttl, ev.id)
      settle(ip)
    end
  elseif ev.t == 'release' then
    local entry = redis.call('HGET', K.lease_data, ev.id)
    if entry and redis.call('ZREM', K.leases, ev.id) == 1 then
      redis.call('HDEL', K.lease_data, ev.id)
      local _, rec = split_first(entry)
      requeue(ip, rec)
      if redis.call('HDEL', K.lease_dl, ev.id) == 1 then
        redis.call('HINCRBY', F.ip .. ip, 'inflight', -1)
      end
      if ev.block_until then
        local blocked = num(redis.call('HGET', F.ip .. ip, 'blocked_until'), 0)
        redis.call('HSET', F.ip .. ip, 'blocked_until', math.max(blocked, ev.block_until))
        redis.call('ZREM', K.ready, ip)  -- rescheduled below at the new time
      end
      stat('released')
      settle(ip)
    end
  elseif redis.call('ZREM', K.leases, ev.id) == 1 then
    redis.call('HDEL', K.lease_data, ev.id)
    if redis.call('HDEL', K.lease_dl, ev.id) == 1 then
      -- Dropped before the downloader (robots, middleware): nothing was fetched,
      -- so the IP is freed without charging its clock.
      redis.call('HINCRBY', F.ip .. ip, 'inflight', -1)
      stat('dropped_before_download')
      settle(ip)
    end
    stat('acked')
  end
end
refill()
local out = counters()
local top = redis.call('ZRANGE', K.ready, 0, 0, 'WITHSCORES')
if top[2] then out.next_due = top[2] end  -- a string: cjson would round to 14 digits
return cjson.encode(out)
