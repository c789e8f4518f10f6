-- include: util, back_queues, ready_heap
-- The leases of a lease call whose reply the worker lost (A.call, lease.lua's token): the
-- client timed out while Redis stalled, and Redis ran the script when it resumed. No
-- worker holds them, so without this they waited out their TTL (lease_ttl, ~60 s) and
-- their IPs with them. Nothing was fetched: each record goes back to the head of its
-- queue and its IP is freed uncharged, as a release before the download is
-- (report.lua). Scans the leases in flight (a few per worker), once per lost call.
local suffix = ':' .. A.call
local given = 0
for _, id in ipairs(redis.call('ZRANGE', K.leases, 0, -1)) do
  if string.sub(id, -#suffix) == suffix then
    local ip = string.match(id, '^(.*)#')
    return_lease(ip, id)
    uncharge(ip)
    settle(ip)
    given = given + 1
  end
end
stat('lost_leases_given_back', given)
local out = counters()
out.given_back = given
return cjson.encode(out)
