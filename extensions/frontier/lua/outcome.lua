-- include: util, ready_heap
-- Outcome of a fetch: the backoff, quarantine, throttle and adaptive delay it sets for its
-- IP (a failure lengthens the IP's next gap, never shortens it: invariant 7; the ready
-- heap reads these fields), and the per-host counters operators read.
-- Keys: F.ip .. ip fields errs (failures in a row: the backoff's exponent), fails (the
-- same without 429/503s), quarantines, failing_since, down, blocked_until, throttle,
-- latency, adaptive;
-- K.host_stats ("<host>|fetched", "<host>|<class>", "<host>|last_fetch"); K.stats
-- (backoff, failure_backoff, quarantined).
--   429/503: blocked for Retry-After (capped) or the backoff, and AIMD: the throttle (a
--     delay) doubles, and each later success gives back CFG.rate_step (FRONTIER_RATE_STEP)
--     of full speed.
--   timeout, connection refused/reset, other 5xx: blocked for the failure backoff;
--     CFG.quarantine_after in a row quarantine the IP, doubled per repeat up to
--     CFG.quarantine_max_s (FRONTIER_QUARANTINE_MAX), until the IP is down (gone_down).
--   any response: the response time's moving average, x CFG.adaptive_factor = adaptive.
-- A success (any other response) resets the failure counts.

-- Weight of the newest response time in the moving average: about the last five fetches
-- count, so one slow page moves the delay a little and a slow spell moves it fully.
local LATENCY_WEIGHT = 0.3

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

-- The n-th consecutive failure's wait: base x 2^(n-1), jittered up (x1 to x1.5, never
-- below: the base is the promised minimum) so blocked IPs do not all return at once.
local function backoff(base, n)
  return math.min(base * 2 ^ (n - 1) * (1 + 0.5 * rand()), CFG.backoff_max)
end

-- Block the IP until `until_at`, never shortening a longer block (an operator's,
-- a quarantine).
local function block(key, until_at)
  if until_at > num(redis.call('HGET', key, 'blocked_until'), 0) then
    redis.call('HSET', key, 'blocked_until', until_at)
  end
end

local function sample_latency(key, latency)
  if CFG.adaptive_factor <= 0 or not latency then return end
  local avg = tonumber(redis.call('HGET', key, 'latency'))
  avg = avg and avg + LATENCY_WEIGHT * (latency - avg) or latency
  redis.call('HSET', key, 'latency', avg, 'adaptive', CFG.adaptive_factor * avg)
end

-- AIMD, multiplicative decrease: the throttle doubles the IP's current gap (capped).
local function slow_down(ip, key)
  local d, throttle = delay_parts(ip)
  local gap = math.max(d, throttle)
  if gap > 0 then
    redis.call('HSET', key, 'throttle', math.min(2 * gap, math.max(d, CFG.backoff_max)))
  end
end

-- AIMD, additive increase: the rate (d / throttle of full speed) grows by rate_step.
local function speed_up(ip, key)
  local d, throttle = delay_parts(ip)
  if throttle <= 0 then return end
  local share = d / throttle + CFG.rate_step
  if share >= 1 then
    redis.call('HDEL', key, 'throttle')
  else
    redis.call('HSET', key, 'throttle', d / share)
  end
end

local function rate_limited(ip, key, ev)
  redis.call('HDEL', key, 'failing_since', 'down')  -- it answered: not down
  local errs = redis.call('HINCRBY', key, 'errs', 1)
  local wait = num(ev.retry_after, -1)
  if wait < 0 then wait = backoff(CFG.backoff_base, errs) end
  block(key, ev.at + math.min(wait, CFG.backoff_max))
  slow_down(ip, key)
  stat('backoff')
end

-- Down: failures in a row, a quarantine among them, for CFG.down_after_s since the first
-- (failing_since; any answer resets it). The IP is not tried again: lease.lua marks its
-- queued URLs and dispatch gives them up unfetched. Without this a host that died
-- mid-crawl kept the crawl running for days (three tries a URL, each after a quarantine
-- doubled up to FRONTIER_QUARANTINE_MAX). `scrapy resume` takes it back (admin.py).
local function gone_down(key, ev)
  if CFG.down_after_s <= 0 then return false end
  local since = num(redis.call('HGET', key, 'failing_since'), ev.at)
  if ev.at - since < CFG.down_after_s then return false end
  redis.call('HSET', key, 'down', ev.at)
  stat('ip_down')
  return true
end

-- After a quarantine, the first failure without a success in between quarantines again,
-- for twice as long (the IP already failed quarantine_after times in a row), or the IP
-- is down.
local function failed(key, ev)
  local errs = redis.call('HINCRBY', key, 'errs', 1)
  local fails = redis.call('HINCRBY', key, 'fails', 1)
  local repeats = num(redis.call('HGET', key, 'quarantines'), 0)
  redis.call('HSETNX', key, 'failing_since', ev.at)
  if fails < CFG.quarantine_after and repeats == 0 then
    block(key, ev.at + backoff(CFG.failure_backoff_base, errs))
    stat('failure_backoff')
    return
  end
  if repeats > 0 and gone_down(key, ev) then return end
  -- The cap is >= quarantine_s (config.py checks it): the first quarantine is never cut.
  block(key, ev.at + math.min(CFG.quarantine_s * 2 ^ repeats, CFG.quarantine_max_s))
  redis.call('HSET', key, 'quarantines', repeats + 1)
  redis.call('HDEL', key, 'fails')
  stat('quarantined')
end

local function outcome(ip, ev)
  local key = F.ip .. ip
  local status = num(ev.status, 0)
  count_host(ev, status)
  if status > 0 then sample_latency(key, ev.latency) end
  if status == 429 or status == 503 then
    rate_limited(ip, key, ev)
  elseif ev.timeout or ev.fail or status >= 500 then
    failed(key, ev)
  elseif status > 0 then
    redis.call('HDEL', key, 'errs', 'fails', 'quarantines', 'failing_since', 'down')
    speed_up(ip, key)
  end
end
