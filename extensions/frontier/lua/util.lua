-- Shared by every frontier script: the decoded arguments, randomness, small helpers,
-- the stats counters and the counters every reply carries.
-- Keys: K.stats (stat: HINCRBY; counters: read), K.leases and K.pending_hosts (read).
-- ARGV[1] is a JSON object: now (epoch s), cfg (settings), families (key prefixes),
-- plus the entry script's own arguments. Redis seeds math.random identically on
-- every call, so randomness comes from cfg.seed through a Park-Miller generator.
local A = cjson.decode(ARGV[1])
local NOW = tonumber(A.now)
local CFG = A.cfg
local F = A.families
local rng = CFG.seed % 2147483646 + 1

local function rand()
  rng = (rng * 16807) % 2147483647
  return rng / 2147483647
end

local function num(v, default)
  local n = tonumber(v)
  if n == nil then return default end
  return n
end

local function split_first(entry)
  local sep = string.find(entry, '|', 1, true)
  return string.sub(entry, 1, sep - 1), string.sub(entry, sep + 1)
end

local function stat(name, by)
  by = by or 1
  -- Lua prints -0 as "-0", which HINCRBY rejects.
  if by ~= 0 then redis.call('HINCRBY', K.stats, name, by) end
end

-- closed_seen: {[this shard's stats key] = changes of its closed_patterns set so far}
-- (traps.lua counts each): a worker that sees it change re-reads the closed set before
-- it dispatches what it leased (admission/blocklist.py), not at its next timed read.
local function counters()
  local v = redis.call('HMGET', K.stats, 'queued', 'recrawl_queued', 'trap_closed',
                       'trap_reopened', 'sequence_ended', 'sequence_end_lifted')
  local changes = num(v[3], 0) + num(v[4], 0) + num(v[5], 0) + num(v[6], 0)
  return {queued = num(v[1], 0), leased = redis.call('ZCARD', K.leases),
          recrawl_queued = num(v[2], 0),
          pending_hosts = redis.call('ZCARD', K.pending_hosts),
          closed_seen = {[K.stats] = changes}}
end
