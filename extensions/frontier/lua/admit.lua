-- include: util, back_queues, router
-- Admit a batch of requests: URL-seen, crawl budgets, then route each to its IP's
-- back queue or a front queue; unresolved hosts park their requests in a pending list.
-- A.items: list of {seen_key ('' = dont_filter), ip ('' = unresolved), host, prio, rec,
-- pattern}. Retries and redirects (seen_key '') bypass URL-seen and budgets.

-- Budgets are counted only for URLs new to the crawl, atomically across workers.
local function over_budget(host, pattern)
  if CFG.max_pages_per_host > 0
      and redis.call('HINCRBY', K.host_pages, host, 1) > CFG.max_pages_per_host then
    return 'host_budget'
  end
  if CFG.max_per_pattern > 0 and pattern ~= ''
      and redis.call('HINCRBY', K.patterns, pattern, 1) > CFG.max_per_pattern then
    return 'pattern_cap'
  end
  return nil
end

local admitted, duplicate, parked, refused, recrawls = 0, 0, {}, {}, 0
for _, it in ipairs(A.items) do
  local seen_key, ip, host, prio, rec, pattern = it[1], it[2], it[3], it[4], it[5], it[6]
  local verdict = nil
  if seen_key ~= '' then
    if redis.call('SADD', K.seen, seen_key) == 0 then
      verdict = 'duplicate'
    else
      verdict = over_budget(host, pattern)
    end
  end
  if verdict == 'duplicate' then
    duplicate = duplicate + 1
  elseif verdict then
    refused[verdict] = (refused[verdict] or 0) + 1
    stat(verdict)
  else
    admitted = admitted + 1
    if is_recrawl(rec) then recrawls = recrawls + 1 end
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
stat('recrawl_queued', recrawls)
stat('duplicate', duplicate)
refill()
local out = counters()
out.admitted, out.duplicate, out.parked, out.refused = admitted, duplicate, parked, refused
return cjson.encode(out)
