-- include: util, back_queues, ready_heap, router, outcome, traps
-- Download outcomes and acks, in order. A 'done' event ends a fetch: it charges
-- the IP's politeness clock (last_end) and applies backoff (outcome.lua); the lease stays
-- until 'ack' (the page's outlinks are admitted), so a worker that dies while parsing
-- loses nothing. The IP stays held (inflight, K.lease_dl = 2) until that ack, as
-- Heritrix holds a host's queue until its URI is fully processed: the page's outcome
-- (a duplicate, a soft-404: trap feedback) and its outlinks reach the frontier before
-- the IP's next fetch is leased. Its next_fetch_at still counts from last_end, so a
-- page processed within the delay costs nothing; at delay 0 a trap pattern got 4-7
-- fetches on one IP before its first verdict arrived.
-- A 'release' event hands back a lease that never reached the downloader (a worker
-- closing with leases buffered): the record returns to the head of its queue.
-- An 'ack' of a fetched page carries its outcome (o: new, duplicate, soft_404, not_found,
-- redirect_walk, ...: traps.lua BAD),
-- host and patterns (pt): trap feedback for the page's URL pattern (traps.lua).
-- A.events: list of {t='done'|'ack'|'release', id, at, status, retry_after, timeout, fail,
-- latency, block_until, o, host, pt}

for _, ev in ipairs(A.events) do
  local ip = string.match(ev.id, '^(.*)#')
  if ev.t == 'done' then
    if redis.call('HGET', K.lease_dl, ev.id) == '1' then
      redis.call('HSET', K.lease_dl, ev.id, 2)  -- fetched: held until its ack
      redis.call('HSET', F.ip .. ip, 'last_end', ev.at)
      outcome(ip, ev)
      redis.call('ZADD', K.leases, 'XX', ev.at + CFG.lease_ttl, ev.id)
    end
  elseif ev.t == 'release' then
    local entry = redis.call('HGET', K.lease_data, ev.id)
    if entry and redis.call('ZREM', K.leases, ev.id) == 1 then
      redis.call('HDEL', K.lease_data, ev.id)
      local _, rec = split_first(entry)
      requeue(ip, rec)
      end_hold(ip, ev.id)
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
    feedback(ev)
    local held = end_hold(ip, ev.id)
    if held then
      -- '1': dropped before the downloader (robots, middleware): nothing was fetched,
      -- so the IP is freed without charging its clock. '2': fetched and processed.
      if held == '1' then
        stat('dropped_before_download')
        uncharge(ip)
      end
      settle(ip)
    end
    stat('acked')
  end
end
flush_traps()
refill()
local out = counters()
if #CHANGED.closed > 0 then out.closed = CHANGED.closed end
if #CHANGED.reopened > 0 then out.reopened = CHANGED.reopened end
local top = redis.call('ZRANGE', K.ready, 0, 0, 'WITHSCORES')
if top[2] then out.next_due = top[2] end  -- a string: cjson would round to 14 digits
out.heap = 1  -- next_due is the ready heap's top, absent when it is empty (leasing.py)
return cjson.encode(out)
