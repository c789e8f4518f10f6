-- include: util, bloom, pattern_records
-- Crawl budget in the admit and report scripts (extensions/admission/budgets.py): URL
-- patterns and their trap feedback, the facet cap, the sized host budget, host importance.
-- Keys: K.patterns (pattern -> "admitted,n,bad,fresh,state,probes,count,live,dead,
-- dead_n,sprawl"; "p|<path>" ->
-- the same for all query variants of a path, "f|<family>" for sibling patterns;
-- "q|<path>" -> faceted variants admitted),
-- K.trap_hosts (host -> pattern fields held), K.closed_patterns (set),
-- K.host_pages (host -> URLs admitted), K.host_info ("<host>|r" referring hosts,
-- "<host>|s" sitemap URLs, "<host>|seed" 1 for a seeded host), URL-seen (bloom.lua: referrer pairs), K.host_stats (page outcomes).
local T = CFG.traps
local OPEN, DEMOTED, CLOSED = 0, 1, 2
-- Patterns this call closed or reopened: the reply tells the calling worker at once
-- (others re-read the closed set when a reply's closed_seen moves: util.lua counters).
local CHANGED = {closed = {}, reopened = {}}
local first_shapes = 0  -- URL shapes first seen in this call (recurs; one stat at the end)

-- Written back once per call, before admit.lua and report.lua reply.
local function flush_traps()
  flush_records()
  stat('trap_shapes_first_seen', first_shapes)
  first_shapes = 0
  seen_flush()
end

-- The finest of the URL's patterns that exists or, with `create`, that its host has
-- room for (PRIORITY_PATTERNS_PER_HOST fine ones, as many coarse ones again, then the
-- host's catch-all) and whose shape recurs, and whether it is new ('recurred': born at
-- its shape's second URL): whoever writes a new field charges the host (held_by), so a
-- refused URL costs no room. Reports get nil for a pattern never admitted.
local function exists(field)
  local _, found = load_pattern(field)
  return found
end

-- A pattern gets its record only once its shape recurs: its first URL sets the pattern's
-- two bits in K.shapes (a bitmap of 8 bits per key of URL-seen's newest generation, ~5%
-- false positives when that generation is full: such a shape only gets its record one
-- URL early) and is charged to the next coarser pattern. Word slugs make nearly every URL
-- of a site its own shape: exact records for those cost ~115 B per URL. Not URL-seen's
-- Bloom: its k = 14 bits made this check cost as much again as the URL's own (~45 us of
-- Redis CPU per URL). The bitmap grows with the Bloom, so a small crawl holds a small
-- one: a new generation replaces it with one sized for that generation, empty (a shape
-- seen once before the switch needs one URL more to get its record).
local shape_bits = 0  -- the bitmap's size this call, in bits (0: not checked yet)

-- SETBIT at a random offset grows the string a step at a time: allocate it once, whole.
local function shapes_bitmap()
  bloom_load()
  local want = 8 * bloom.gens[#bloom.gens].n
  if shape_bits == want then return want end
  shape_bits = want
  if redis.call('STRLEN', K.shapes) * 8 == want then return want end
  redis.call('DEL', K.shapes)
  if want <= 8 * 1048576 then
    redis.call('SET', K.shapes, string.rep('\0', want / 8))
  else
    redis.call('SETBIT', K.shapes, want - 1, 0)
  end
  return want
end

local function recurs(field)
  local bits = shapes_bitmap()
  local digest = redis.sha1hex(field)
  local a = tonumber(string.sub(digest, 1, 8), 16) % bits
  local b = tonumber(string.sub(digest, 9, 16), 16) % bits
  -- '1', not 1: a number argument costs Redis a %.17g format.
  local old = redis.call('BITFIELD', K.shapes, 'SET', 'u1', a, '1', 'SET', 'u1', b, '1')
  if old[1] == 1 and old[2] == 1 then return true end
  first_shapes = first_shapes + 1
  return false
end

local function resolve(host, pt, create)
  if exists(pt[1]) then return pt[1], false end
  local held = num(cached(K.trap_hosts, host), 0)
  if create and held < T.patterns_per_host and recurs(pt[1]) then return pt[1], 'recurred' end
  if exists(pt[2]) then return pt[2], false end
  if create and held < 2 * T.patterns_per_host and recurs(pt[2]) then
    return pt[2], 'recurred'
  end
  if exists(pt[3]) then return pt[3], false end
  if create then return pt[3], true end
  return nil, false
end

-- A field resolve gave a URL of fine pattern `fine`: a catch-all of a host's pages when
-- it is the coarse pattern of a URL without a query or the host-wide one (a coarse
-- pattern with a query ends in '?', patterns.py: it holds query variants only).
local function catch_all(field, fine)
  return field ~= fine and string.sub(field, -1) ~= '?'
end

local function held_by(host)
  incr(K.trap_hosts, host, 1)
end

-- Distinct faceted variants of one path (facet/sort/session-named parameters in any
-- combination): refused past the cap.
local function over_facet_cap(host, facet_key)
  if T.facet_max <= 0 or facet_key == '' then return false end
  local field = 'q|' .. facet_key
  local n = redis.call('HINCRBY', K.patterns, field, 1)
  if n == 1 then held_by(host) end
  return n > T.facet_max
end

-- A host the operator named (a seed URL's, or where a seed redirected): its budget's base
-- is T.host_budget_seeded, so a site asked for by name is crawled whole (a documentation
-- site of 4,000 pages stopped at 2,000), while hosts its links lead to keep the default.
local function mark_seeded(host)
  if not cached(K.host_info, host .. '|seed') then incr(K.host_info, host .. '|seed', 1) end
end

local function host_budget(host)
  if T.host_budget <= 0 then return 0 end
  local refs = num(cached(K.host_info, host .. '|r'), 0)
  local listed = num(cached(K.host_info, host .. '|s'), 0)
  local by_sitemap = math.floor(T.budget_per_sitemap_url * listed)
  local base = T.host_budget
  if cached(K.host_info, host .. '|seed') then base = math.max(base, T.host_budget_seeded) end
  return base + T.budget_per_referrer * refs + by_sitemap
end

-- A link from another host counts once per (referring host, host) pair: the pair's key
-- shares URL-seen's set (a 16-hex fingerprint like any other).
-- The pair (referring host, host) is a URL-seen key (bloom.lua, from the admit script):
-- a false positive only misses one referring host.
local function count_referrer(host, ref_key)
  if ref_key ~= '' and not seen_before(ref_key) then
    seen_mark(ref_key)
    incr(K.host_info, host .. '|r', 1)
  end
end

local function host_bonus(host)
  local refs = num(cached(K.host_info, host .. '|r'), 0)
  return math.min(T.host_bonus_max, T.host_weight * math.log(1 + refs) / math.log(2))
end

-- Bucket of a score among n (front queues, or the lanes of an IP's back queue).
local function bucket(score, n)
  n = n or #CFG.weights
  local p = math.floor((100 - score) * n / 100)
  return math.max(0, math.min(n - 1, p))
end

-- A URL the pattern refuses (`reason`), or lets in as its one probe in probe_every, so
-- fresh pages can still show up: t[6] counts them.
local function refuse_or_probe(field, t, reason)
  t[6] = t[6] + 1
  save_pattern(field, t)
  if t[6] % T.probe_every ~= 0 then return reason end
  return 'probe'
end

-- A closed pattern refuses the URL, or lets it in as its probe.
local function gate(field)
  local t = load_pattern(field)
  if t[5] ~= CLOSED then return nil, t end
  return refuse_or_probe(field, t, 'pattern_closed'), t
end

-- Past the end of a numbered sequence (/page/N, ?page=N: patterns.number_of). A fine
-- pattern's record keeps t[8] its highest number fetched as new content, t[9] the lowest
-- dead number (SEQUENCE, below) above that, t[10] how many dead numbers
-- came above it. Once CFG.traps.end_after have (one broken link must not end a section)
-- above a live one, numbers past t[9] are refused: a forum of 100 pages linking /page/110
-- .. /page/200.
-- A new page above t[9] lifts the end; a closed-set member "n|<end>|<pattern>" tells the
-- workers, whose dispatch drops queued URLs past it (admission/blocklist.py).
local function ceiling_member(field, t)
  -- No live number yet: no sequence is known (its first pages may be duplicates).
  if T.end_after <= 0 or t[10] < T.end_after or t[8] <= 0 then return nil end
  return 'n|' .. string.format('%d', t[9]) .. '|' .. field
end

local function past_the_end(it, field, t)
  if it.num < 0 or it.sitemap == 1 or field ~= it.pt[1] then return nil end
  if not ceiling_member(field, t) or it.num <= t[9] then return nil end
  return refuse_or_probe(field, t, 'past_the_end')  -- a probe shows a grown sequence
end

-- What a numbered page says of its sequence: live (new content) or dead (not found, or a
-- copy of its own pattern's page: a clamped last page). A duplicate of another pattern's
-- page says nothing: real numbered pages can be near copies of a page elsewhere.
local SEQUENCE = {
  new = 'live', sprawl = 'live', sprawl_chain = 'live', soft_404 = 'dead', not_found = 'dead',
  copy = 'dead',
}

-- One numbered page's outcome into its fine pattern's sequence end.
local function learn_number(field, n, outcome)
  local said = SEQUENCE[outcome]
  local t = load_pattern(field)
  if not said or n <= t[8] then return end
  local was = ceiling_member(field, t)
  if said == 'live' then
    t[8] = n
    if t[9] <= n then t[9], t[10] = 0, 0 end
  else
    if t[9] == 0 or n < t[9] then t[9] = n end
    t[10] = t[10] + 1
  end
  save_pattern(field, t)
  local now = ceiling_member(field, t)
  if was == now then return end
  if was then
    redis.call('SREM', K.closed_patterns, was)
    table.insert(CHANGED.reopened, was)
  end
  if now then
    redis.call('SADD', K.closed_patterns, now)
    table.insert(CHANGED.closed, now)
    stat('sequence_ended')
  else
    stat('sequence_end_lifted')
  end
end

-- Admission of a URL new to the crawl: the pattern's state (and, for a URL with a
-- query, its path's: all query variants of one path together), caps and budgets.
-- Returns a refusal reason, or nil, the front queue (the score's bucket), whether the
-- URL is a closed pattern's probe, and its lane.
local function charge(it)
  local host, pt = it.host, it.pt
  local state, field, t, new = OPEN, nil, nil, false
  local probe = false
  it.catch = false
  if pt[1] ~= '' then
    field, new = resolve(host, pt, true)
    -- Charged to a catch-all (a shape seen once, or no room): dispatch checks its coarse
    -- pattern too (admit.lua marks the record), a URL of its own pattern not.
    it.catch = catch_all(field, pt[1])
    local verdict, path_t, family_t = nil, nil, nil
    verdict, t = gate(field)
    -- Born at its shape's second URL: the first one (charged to a coarser pattern) counts
    -- towards URL_MAX_PER_PATTERN too.
    if new == 'recurred' and t[1] == 0 then t[1] = 1 end
    if verdict == nil and pt[4] ~= '' then verdict, path_t = gate('p|' .. pt[4]) end
    -- A sitemap URL passes its family: the site lists it as one of its pages.
    -- A URL has up to two families, space-separated (admission/patterns.py family_of:
    -- its siblings', and a subdomain's across its registered domain).
    if verdict == nil and (pt[6] or '') ~= '' and it.sitemap ~= 1 then
      for family in string.gmatch(pt[6], '%S+') do
        local this_t
        verdict, this_t = gate('f|' .. family)
        if not family_t or this_t[5] > family_t[5] then family_t = this_t end
        if verdict ~= nil then break end
      end
    end
    if verdict == nil then verdict = past_the_end(it, field, t) end
    if verdict == 'pattern_closed' or verdict == 'past_the_end' then return verdict end
    probe = verdict == 'probe'
    state = math.max(t[5], path_t and path_t[5] or OPEN, family_t and family_t[5] or OPEN)
    -- The cap is for one URL shape (host/calendar/<N>/<N>). A coarser field is a catch-all
    -- of shapes seen once (word slugs: /wiki/<title>, a flat manual's pages), which the
    -- host budget bounds: capped, it stopped a 1,169-page manual at ~1,000.
    if CFG.max_per_pattern > 0 and field == pt[1] and t[1] >= CFG.max_per_pattern then
      return 'pattern_cap'
    end
    if over_facet_cap(host, pt[5]) then return 'facet_cap' end
  end
  if CFG.max_pages_per_host > 0 or T.host_budget > 0 then
    -- Only admitted URLs spend the budget.
    local pages = num(cached(K.host_pages, host), 0) + 1
    if CFG.max_pages_per_host > 0 and pages > CFG.max_pages_per_host then return 'host_budget' end
    if T.host_budget > 0 and pages > host_budget(host) then return 'host_budget' end
    incr(K.host_pages, host, 1)
  end
  if it.sitemap == 1 then incr(K.host_info, host .. '|s', 1) end
  if field then
    if new then held_by(host) end
    t[1] = t[1] + 1
    save_pattern(field, t)
  end
  if probe then return nil, #CFG.weights - 1, true, CFG.lanes - 1 end  -- last
  if it.prio >= 0 then return nil, it.prio, false, nil end
  local score = it.score + host_bonus(host)
  if state == DEMOTED then score = score - T.demote_penalty end
  return nil, bucket(score), false, bucket(score, CFG.lanes)
end

-- copy: a duplicate of a page of its own pattern (a template walking itself: a growing
-- query, a next-month link), which recounts that first page as a duplicate too.
-- sprawl: new content whose page linked only URLs of its own shape nobody linked before
-- (admission/sprawl.py): bad from the pattern's T.sprawl_after-th such page on (sprawled).
-- redirect_walk: a hop of a redirect chain that keeps landing on new URLs of its own shape
-- (admission/redirect_walks.py).
local BAD = {
  new = 0, sprawl = 0, sprawl_chain = 0, duplicate = 1, copy = 1, soft_404 = 1, not_found = 1,
  redirect_walk = 1,
}

local function judge(field, t, held_open)
  local share = 0
  if t[2] > 0 then share = t[3] / t[2] end
  if t[7] < T.min_pages then return end
  if share >= T.close_share and not held_open then
    t[5], t[4] = CLOSED, 0
    redis.call('SADD', K.closed_patterns, field)
    table.insert(CHANGED.closed, field)
    stat('trap_closed')
  elseif share >= T.demote_share then
    if t[5] ~= DEMOTED then stat('trap_demoted') end
    t[5] = DEMOTED
  else
    t[5] = OPEN
  end
end

-- A sprawl page into t[11] (the pattern's sprawl pages): new content until the
-- T.sprawl_after-th, which recounts the earlier ones (counted as new) as bad, each with
-- the decayed weight an outcome of the pattern's has on average (t[2] / t[7]: all of
-- it for a pattern whose every page was sprawl, little for sprawl pages spread over a
-- long section); bad from then on. A generator's pattern is then all bad and closes; a
-- real section, whose first pages or random ones may be sprawl but whose others link
-- back into it, keeps its share of good pages. A probe of a closed one stays bad.
-- `chain`: a sprawl page of a chain's PRIORITY_SPRAWL_CHAIN-th generation (sprawl.py), the
-- T.sprawl_after-th at once.
local function sprawled(t, chain)
  if T.sprawl_after <= 0 then return 0 end
  if chain then t[11] = math.max(t[11], T.sprawl_after - 1) end
  t[11] = t[11] + 1
  if t[11] < T.sprawl_after then return 0 end
  if t[11] == T.sprawl_after then
    local weight = t[2] / math.max(t[7], 1)
    t[3] = math.min(t[2], t[3] + (T.sprawl_after - 1) * weight)
    stat('sprawl_recounted')
  end
  return 1
end

-- One outcome into one pattern's record: decayed counts, then its state. `recount`: the
-- pattern's first copy of one of its own pages, whose "new" is recounted as bad.
-- `catch_all`: a coarse pattern without a query, or the host-wide one (resolve: shapes
-- seen once, and every shape past the host's room). Copies and not-found pages demote
-- it at most: it holds a shop's products beside the filter pages that spilled into it
-- once the host's fine patterns ran out, and closing it on their copies dropped the
-- products still queued (96 of a shop's real pages, in one crawl of 5). Sprawl closes
-- it (a generator's pages, each its own shape, have no other pattern to close: tarpits
-- under random directories). One an older crawl closed without sprawl reopens here.
local function learn(field, bad, recount, sprawl, catch_all)
  local t = load_pattern(field)
  local d = 1 - 1 / T.window
  if sprawl then bad = sprawled(t, sprawl == 'sprawl_chain') end
  if recount and t[3] == 0 then
    -- A record born at the shape's second URL missed its first page (recurs): a copy
    -- proves that page was fetched, so it is counted here, as bad.
    if t[2] == 0 then t[2], t[7] = 1, t[7] + 1 end
    t[3] = math.min(t[2], 1)
  end
  t[2], t[3], t[7] = t[2] * d + 1, t[3] * d + bad, t[7] + 1
  local held_open = catch_all and t[11] < math.max(T.sprawl_after, 1)
  if t[5] == CLOSED then
    if bad == 1 then t[4] = 0 else t[4] = t[4] + 1 end
    if t[4] >= T.reopen_after or held_open then
      t[2], t[3], t[4], t[5], t[7], t[11] = 0, 0, 0, OPEN, 0, 0
      redis.call('SREM', K.closed_patterns, field)
      table.insert(CHANGED.reopened, field)
      stat('trap_reopened')
    end
  else
    judge(field, t, held_open)
  end
  save_pattern(field, t)
end

-- A record several patterns share (created at the first outcome, charged to the host like
-- any pattern field, while the host has room). `recount`: a redirect walk's hop, which
-- proves the chain's start (a page of the record too, fetched with no outcome: it was not
-- reached in shape) was a hop as well. Slugs are a fine pattern each (/moved/<w>-<w>), so
-- only their family sees a chain whole: without it a family learnt 2 hops of a chain of
-- 3 and stayed open below PRIORITY_TRAP_MIN_PAGES while real pages linked new starts.
local function learn_shared(host, field, bad, sprawl, recount)
  if not exists(field) then
    local held = num(cached(K.trap_hosts, host), 0)
    if held >= 2 * T.patterns_per_host then return end
    held_by(host)
  end
  learn(field, bad, recount, sprawl)
end

-- A fetched page's outcome (report.lua 'ack' events: ev.o, ev.host, ev.pt = fine, coarse,
-- host-wide pattern, path key, family: scheduler.page_ack) feeds its
-- URL pattern; its path's query-variant record ("p|", when it has a query); and its
-- family's ("f|": the pattern with its last name abstracted, admission/patterns.py), so
-- siblings of a closed section (/shop/bags/?page after /shop/shoes/?page, a third broken
-- slug at the root) are judged before they are fetched.
local function feedback(ev)
  local bad = BAD[ev.o or '']
  if bad == nil or not ev.pt or not ev.host then return end
  redis.call('HINCRBY', K.host_stats, ev.host .. '|page_' .. ev.o, 1)
  -- The sprawl outcome (sprawl or sprawl_chain), nil for another.
  local sprawl = (ev.o == 'sprawl' or ev.o == 'sprawl_chain') and ev.o or nil
  local field = resolve(ev.host, ev.pt, false)
  -- A copy, or a redirect walk's hop, proves its pattern's first page was one too.
  local recount = ev.o == 'copy' or ev.o == 'redirect_walk'
  if field then learn(field, bad, recount, sprawl, catch_all(field, ev.pt[1])) end
  if field and field == ev.pt[1] and ev.n then learn_number(field, ev.n, ev.o) end
  local walk = ev.o == 'redirect_walk'
  if (ev.pt[4] or '') ~= '' then learn_shared(ev.host, 'p|' .. ev.pt[4], bad, sprawl, walk) end
  for family in string.gmatch(ev.pt[5] or '', '%S+') do
    learn_shared(ev.host, 'f|' .. family, bad, sprawl, walk)
  end
end
