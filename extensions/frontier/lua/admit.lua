-- include: util, authority, back_queues, ready_heap, router, bloom, traps
-- Admit a batch of requests: URL-seen, crawl budgets and trap feedback (traps.lua), then
-- route each to its IP's back queue or a front queue, in the lane of its score's bucket;
-- unresolved hosts park their requests in a pending list.
-- A.items: list of {seen_key ('' = dont_filter), ip ('' = unresolved), host, prio (-1 =
-- the score's bucket), rec, fine, coarse, host-wide pattern, path key (query URLs),
-- facet key (faceted URLs), score, referrer pair key, sitemap (0/1), family, seed (0/1),
-- number (its counter in its pattern, -1 for none), and for a link whose admission
-- settles its page's verdict the page's lease id (frontier/settled_acks.py)}
-- (AdmitItem.lua).
-- Retries and redirects (seen_key '') bypass URL-seen and budgets.

-- Routing is batched within the call: an IP's membership of the active set and its place
-- on the ready heap do not change during the loop (refill, after it, is what moves IPs),
-- so each is looked up once per IP; each list then gets one RPUSH of its records, in order.
local active, pushes, push_order = {}, {}, {}
-- A queue's priority and lane as text, formatted once per call: Lua formats a number with
-- %.14g in every concatenation (a C printf per URL and number).
local TEXT = {}

local function text(n)
  local s = TEXT[n]
  if not s then
    s = tostring(n)
    TEXT[n] = s
  end
  return s
end

local function push(key, value)
  local list = pushes[key]
  if not list then
    list = {}
    pushes[key] = list
    push_order[#push_order + 1] = key
  end
  list[#list + 1] = value
end

-- router.lua's route, deferred: back queue of an active IP (scheduled once) or front queue.
local function route_later(ip, prio, rec, lane)
  lane = lane or lane_of_prio(prio)
  rec = elide_authority(ip, rec)
  local is_active = active[ip]
  if is_active == nil then
    is_active = redis.call('SISMEMBER', K.active, ip) == 1
    active[ip] = is_active
    if is_active then schedule_ip(ip) end
  end
  if is_active then
    push(back_of(ip, rec, lane), rec)
  else
    push(F.front .. text(prio), ip .. '|' .. text(lane) .. '|' .. rec)
  end
end

local function push_all()
  for _, key in ipairs(push_order) do
    local list = pushes[key]
    for i = 1, #list, 1000 do  -- unpack's stack stays small
      redis.call('RPUSH', key, unpack(list, i, math.min(i + 999, #list)))
    end
  end
end

-- charge's argument, refilled for each new URL (charge keeps neither table).
local item = {pt = {}}
local admitted, duplicate, parked, refused, recrawls, probes = 0, 0, {}, {}, 0, 0
-- Pages (lease ids) one of whose marked links was seen before: a sprawl candidate linked
-- by another page is not a generator's (the worker reports it as "new"). And per page,
-- its marked links queued new to the crawl: a listing copy's items (settled_acks.py).
local settled, settled_list, fresh = {}, {}, {}
for _, it in ipairs(A.items) do
  local seen_key, ip, host, prio, rec = it[1], it[2], it[3], it[4], it[5]
  local verdict, probe, lane = nil, false, nil
  if it[15] == 1 then mark_seeded(host) end  -- redirects of a seed too (seen_key '')
  if seen_key ~= '' then
    count_referrer(host, it[12])
    if seen_before(seen_key) then
      verdict = 'duplicate'
    else
      local pt = item.pt
      pt[1], pt[2], pt[3], pt[4], pt[5], pt[6] = it[6], it[7], it[8], it[9], it[10], it[14] or ''
      item.host, item.prio, item.score, item.sitemap = host, prio, it[11], it[13]
      item.num = it[16] or -1
      verdict, prio, probe, lane = charge(item)
      -- Refused by trap feedback: not marked seen (a Bloom filter cannot forget), so it
      -- may come back once the pattern reopens (budgets and caps are final for this crawl).
      if verdict ~= 'pattern_closed' and verdict ~= 'past_the_end' then seen_mark(seen_key) end
    end
  elseif prio < 0 then
    prio, lane = bucket(it[11]), bucket(it[11], CFG.lanes)
  end
  if verdict == 'duplicate' then
    duplicate = duplicate + 1
    local page = it[17]
    if page and not settled[page] then
      settled[page] = true
      settled_list[#settled_list + 1] = page
    end
  elseif verdict then
    refused[verdict] = (refused[verdict] or 0) + 1
  else
    admitted = admitted + 1
    local page = it[17]
    if page then fresh[page] = (fresh[page] or 0) + 1 end
    if is_recrawl(rec) then recrawls = recrawls + 1 end
    -- Counted against its facet cap: dispatch keeps it (records.FACET_MARK).
    if seen_key ~= '' and it[10] ~= '' then rec = FACET_MARK .. rec end
    if probe then
      rec = PROBE_MARK .. rec
      probes = probes + 1
    elseif item.catch then
      rec = CATCH_MARK .. rec
    end
    if ip == '' then
      redis.call('RPUSH', F.pending .. host, prio .. '|' .. (lane or '') .. '|' .. rec)
      if redis.call('ZADD', K.pending_hosts, 'NX', NOW, host) == 1 then
        parked[#parked + 1] = host
      end
    else
      route_later(ip, prio, rec, lane)
    end
  end
end
flush_traps()
push_all()
-- The call's counters once each, not a HINCRBY per refused URL or probe.
for verdict, n in pairs(refused) do stat(verdict, n) end
stat('trap_probes', probes)
stat('queued', admitted)
stat('admitted', admitted)
stat('recrawl_queued', recrawls)
stat('duplicate', duplicate)
refill()
local out = counters()
out.admitted, out.duplicate, out.parked, out.refused = admitted, duplicate, parked, refused
out.settled, out.fresh = settled_list, fresh
return cjson.encode(out)
