-- include: util
-- The records of trap feedback (traps.lua), read and written once per script call.
-- Keys: K.patterns (URL pattern -> "admitted,n,bad,fresh,state,probes,count,live,dead,
-- dead_n,sprawl", trailing zeros cut), and the counter hashes traps.lua reads beside it
-- (K.trap_hosts, K.host_pages, K.host_info).

-- One call's reads of these hashes hit Redis once per field, and its writes go back once,
-- at its end (flush_records: traps.lua's flush_traps, which admit.lua and report.lua call
-- before they reply): a page's outlinks share a few hosts and patterns. Nothing else
-- reads them within the call.
local FIELDS, DIRTY = {}, {}  -- key -> field -> value (false: absent); key -> field -> true
-- field -> parsed record; field -> whether Redis or this call holds it; field -> true
local PATTERNS, FOUND, DIRTY_PATTERNS = {}, {}, {}

local function cached(key, field)
  local fields = FIELDS[key]
  if not fields then
    fields = {}
    FIELDS[key] = fields
  end
  local v = fields[field]
  if v == nil then
    v = redis.call('HGET', key, field) or false
    fields[field] = v
  end
  return v
end

local function incr(key, field, by)
  local n = num(cached(key, field), 0) + by
  FIELDS[key][field] = n
  DIRTY[key] = DIRTY[key] or {}
  DIRTY[key][field] = true
  return n
end

local function parse_pattern(raw)
  local t, i = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1
  if not raw then return t end
  -- Most records are a bare count: no gmatch (a C closure and a string per field).
  if not string.find(raw, ',', 1, true) then
    t[1] = tonumber(raw) or 0
    return t
  end
  -- A pre-feedback crawl stored a bare count here: it reads as "admitted".
  for x in string.gmatch(raw or '', '[^,]+') do
    t[i] = tonumber(x) or 0
    i = i + 1
  end
  return t
end

-- A pattern's record (zeros when absent) and whether it exists; the table is the cached
-- one, so changes to it are saved by save_pattern.
local function load_pattern(field)
  local t = PATTERNS[field]
  if not t then
    local raw = redis.call('HGET', K.patterns, field)
    t = parse_pattern(raw)
    PATTERNS[field], FOUND[field] = t, raw ~= false
  end
  return t, FOUND[field]
end

local function save_pattern(field, t)
  PATTERNS[field], FOUND[field] = t, true
  DIRTY_PATTERNS[field] = true
end

local function hset_all(key, args)
  for i = 1, #args, 2000 do  -- unpack's stack stays small
    redis.call('HSET', key, unpack(args, i, math.min(i + 1999, #args)))
  end
end

-- A record's text without its trailing zero fields: most patterns have only been
-- admitted so far ("3", not "3,0.000,0.000,0,0,0,0": 20 bytes each), read back as zeros.
-- Fields 2 and 3 are decayed counts; the rest are integers.
local function pattern_text(t)
  local n = #t
  while n > 1 and t[n] == 0 do n = n - 1 end
  if n == 1 then return string.format('%d', t[1]) end  -- the common record: one format
  local out = {}
  for i = 1, n do
    out[i] = string.format((i == 2 or i == 3) and '%.3f' or '%d', t[i])
  end
  while n > 1 and tonumber(out[n]) == 0 do n = n - 1 end
  return table.concat(out, ',', 1, n)
end

-- The call's changed records and counters, written back once each (flush_traps).
local function flush_records()
  local args = {}
  for field in pairs(DIRTY_PATTERNS) do
    args[#args + 1] = field
    args[#args + 1] = pattern_text(PATTERNS[field])
  end
  if #args > 0 then hset_all(K.patterns, args) end
  for key, fields in pairs(DIRTY) do
    args = {}
    for field in pairs(fields) do
      args[#args + 1] = field
      args[#args + 1] = FIELDS[key][field]
    end
    hset_all(key, args)
  end
  DIRTY, DIRTY_PATTERNS = {}, {}
end
