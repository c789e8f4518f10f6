-- include: util
-- Outcome of a fetch: the backoff, quarantine and adaptive delay it sets for its IP
-- (a failure lengthens the IP's next gap, never shortens it: invariant 7; the ready
-- heap reads these fields), and the per-host counters operators read.
-- Keys: F.ip .. ip fields errs, timeouts, blocked_until, adaptive; K.host_stats
-- ("<host>|fetched", "<host>|<class>", "<host>|last_fetch"); K.stats (backoff, quarantined).

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
