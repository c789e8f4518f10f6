-- Admit a batch of requests: URL-seen, then route each to its IP's back queue
-- or a front queue; unresolved hosts park their requests in a pending list.
-- A.items: list of {seen_key ('' = dont_filter), ip ('' = unresolved), host, prio, rec}
local admitted, duplicate, parked = 0, 0, {}
for _, it in ipairs(A.items) do
  local seen_key, ip, host, prio, rec = it[1], it[2], it[3], it[4], it[5]
  if seen_key ~= '' and redis.call('SADD', K.seen, seen_key) == 0 then
    duplicate = duplicate + 1
  else
    admitted = admitted + 1
    if ip == '' then
      redis.call('RPUSH', F.pending .. host, prio .. '|' .. rec)
      if redis.call('ZADD', K.pending_hosts, 'NX', NOW, host) == 1 then
        parked[#parked + 1] = host
      end
    else
      route(ip, prio, rec)
    end
  end
end
stat('queued', admitted)
stat('admitted', admitted)
stat('duplicate', duplicate)
refill()
local out = counters()
out.admitted, out.duplicate, out.parked = admitted, duplicate, parked
return cjson.encode(out)
