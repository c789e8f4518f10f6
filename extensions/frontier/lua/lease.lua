-- include: util, back_queues, ready_heap, router
-- Lease up to A.n requests from IPs whose next_fetch_at has come. Expired leases
-- (dead workers) are first put back at the head of their back queue.
local function reclaim(limit)
  local ids = redis.call('ZRANGEBYSCORE', K.leases, '-inf', NOW, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    local ip = string.match(id, '^(.*)#')
    -- Died mid-download ('1'): the fetch may have hit the server, so charge the IP now.
    -- Died processing a fetched page ('2', report.lua): its 'done' charged it.
    if return_lease(ip, id) == '1' then redis.call('HSET', F.ip .. ip, 'last_end', NOW) end
    stat('lease_expired')
    settle(ip)
  end
end

-- Paused by an operator: the key, or the IP of a per-host key (every host on it).
local function paused(ip)
  if redis.call('HEXISTS', K.paused_ips, ip) == 1 then return true end
  local at = ip_part(ip)
  return at ~= nil and redis.call('HEXISTS', K.paused_ips, at) == 1
end

-- A down IP's records go out marked (records.py DOWN_MARK, after a re-crawl's own mark)
-- for dispatch to give up unfetched (outcome.lua gone_down); lease_data keeps them as
-- queued. A lease like any other: its drop is acked, and the crawl can end.
local function marked_if_down(ip, rec)
  if not redis.call('HGET', F.ip .. ip, 'down') then return rec end
  if string.sub(rec, 1, 2) == 'R|' then return 'R|D|' .. string.sub(rec, 3) end
  return 'D|' .. rec
end

reclaim(100)
local leases = {}
-- Kill switch: nothing leaves while the crawl is paused (reclaiming goes on).
if redis.call('EXISTS', K.paused) == 1 then A.n = 0 end
-- Recycling a drained IP can make another IP due at once: a few rounds let one
-- call fill the whole request instead of leaving that work to the next call.
for _ = 1, 4 do
  local want = A.n - #leases
  if want <= 0 then break end
  local ips = redis.call('ZRANGEBYSCORE', K.ready, '-inf', NOW, 'LIMIT', 0, want)
  if #ips == 0 then break end
  for _, ip in ipairs(ips) do
    local rec = nil
    if paused(ip) then
      -- Paused by an operator: looked at again in a second, its queue untouched.
      redis.call('ZADD', K.ready, NOW + 1, ip)
    else
      redis.call('ZREM', K.ready, ip)
      rec = pop_back(ip)
      if not rec then recycle(ip) end
    end
    if rec then
      local id = start_hold(ip, NOW)
      redis.call('HSET', K.lease_data, id, ip .. '|' .. rec)
      leases[#leases + 1] = {id, marked_if_down(ip, rec)}
      schedule_ip(ip)
    end
  end
end
stat('queued', -#leases)
stat('leased', #leases)
refill()

-- Hosts whose resolution is due: claimed for 30 s so one worker resolves each.
local hosts = redis.call('ZRANGEBYSCORE', K.pending_hosts, '-inf', NOW, 'LIMIT', 0, 20)
for _, host in ipairs(hosts) do
  redis.call('ZADD', K.pending_hosts, NOW + 30, host)
end

local out = counters()
out.leases, out.hosts = leases, hosts
local top = redis.call('ZRANGE', K.ready, 0, 0, 'WITHSCORES')
if top[2] then out.next_due = top[2] end  -- a string: cjson would round to 14 digits
local exp = redis.call('ZRANGE', K.leases, 0, 0, 'WITHSCORES')
if exp[2] then out.next_expiry = exp[2] end
return cjson.encode(out)
