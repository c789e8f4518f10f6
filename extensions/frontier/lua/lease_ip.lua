-- include: util, ready_heap
-- Lease an IP for one request its queues do not hold: a robots.txt redirect hop to a
-- host on another IP (frontier/hops.py). Without it that request would reach the IP
-- uncharged, maybe beside a fetch in flight there (DESIGN invariants 1 and 2).
-- It succeeds only when the IP is due (next_fetch_at and its ready-heap entry have
-- come) and below its in-flight cap, and charges it as lease.lua does: inflight,
-- last_start, a lease in K.leases and K.lease_dl that report.lua's 'done' (charging
-- last_end and the IP's backoff) and 'ack' settle. It has no K.lease_data record, so a
-- lease its worker never reports is reclaimed (the IP charged) with nothing requeued.
-- A.ip: the politeness key (the IP, or "<ip>@<host>"). Reply: the counters, plus lease = id, or retry_at = when to ask again.
local ip = A.ip
local at = ip_part(ip) or ip  -- an operator pauses an IP with every host on it (lease.lua)
local retry = nil
if redis.call('EXISTS', K.paused) == 1 or redis.call('HEXISTS', K.paused_ips, ip) == 1
    or redis.call('HEXISTS', K.paused_ips, at) == 1 then
  retry = NOW + 1  -- paused: looked at again in a second, as lease.lua does
elseif num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) >= CFG.ip_concurrency then
  retry = NOW + ip_delay(ip)  -- the fetch in flight ends no earlier than now
else
  local due = math.max(next_fetch_at(ip), num(redis.call('ZSCORE', K.ready, ip), 0))
  if due > NOW then retry = due end
end

if retry then
  local out = counters()
  out.retry_at = string.format('%.6f', retry)  -- a string: cjson would round to 14 digits
  return cjson.encode(out)
end
local id = ip .. '#' .. redis.call('INCR', K.lease_seq)
redis.call('HSET', K.lease_dl, id, 1)
redis.call('ZADD', K.leases, NOW + CFG.lease_ttl, id)
redis.call('HINCRBY', F.ip .. ip, 'inflight', 1)
redis.call('HSET', F.ip .. ip, 'last_start', NOW)
-- Off the heap while in flight; back at next_fetch_at below its cap (ip_concurrency > 1).
redis.call('ZREM', K.ready, ip)
schedule_ip(ip)
stat('hop_leased')
local out = counters()
out.lease = id
return cjson.encode(out)
