-- include: util, ready_heap
-- Lease a politeness key for one request its queues do not hold: a robots.txt redirect
-- hop to a host on another IP (frontier/hops.py). Without it that request would reach
-- the IP uncharged, maybe beside a fetch in flight there (DESIGN invariants 1 and 2).
-- A key below its in-flight cap is leased from the time it is due (next_fetch_at, or
-- its ready-heap entry if later) when that is no later than A.latest: the lease is
-- taken now, so the key's own pages, leased by lease.lua whenever it comes due, cannot
-- push the hop back again and again (measured: 8 waits, the hop sent only once the
-- target's queue was empty); the caller starts its fetch at start_at. It is charged as
-- lease.lua charges: inflight, last_start, a lease in K.leases and K.lease_dl that
-- report.lua's 'done' (last_end, backoff) and 'ack' settle. It has no K.lease_data
-- record, so a lease its worker never reports is reclaimed (charged) requeueing nothing.
-- A.ip: the key (the IP, or "<ip>@<host>"); A.latest: the latest start accepted (epoch s).
-- Reply: the counters, plus lease = id and start_at, or retry_at = when to ask again.
local ip = A.ip
local at = ip_part(ip) or ip  -- an operator pauses an IP with every host on it (lease.lua)
local retry, start = nil, nil
if redis.call('EXISTS', K.paused) == 1 or redis.call('HEXISTS', K.paused_ips, ip) == 1
    or redis.call('HEXISTS', K.paused_ips, at) == 1 then
  retry = NOW + 1  -- paused: looked at again in a second, as lease.lua does
elseif num(redis.call('HGET', F.ip .. ip, 'inflight'), 0) >= CFG.ip_concurrency then
  retry = NOW + ip_delay(ip)  -- the fetch in flight ends no earlier than now
else
  start = math.max(next_fetch_at(ip), num(redis.call('ZSCORE', K.ready, ip), 0))
  if start > tonumber(A.latest) then retry = start end
end

if retry then
  local out = counters()
  out.retry_at = string.format('%.17g', retry)  -- a string: cjson would round to 14 digits
  return cjson.encode(out)
end
local id = start_hold(ip, start)
-- Off the heap while in flight; back at next_fetch_at below its cap (ip_concurrency > 1).
redis.call('ZREM', K.ready, ip)
schedule_ip(ip)
stat('hop_leased')
local out = counters()
out.lease, out.start_at = id, string.format('%.17g', start)
return cjson.encode(out)
