-- include: hamming
-- Add fingerprints (with their sketches) to a SimhashIndex, optionally refusing
-- confirmed near-duplicates of adds the caller's probe may not have seen (the
-- commit half of check_and_add; simhash_index.py says why the probe itself is
-- client-side, simhash_keys.py why the commit ring).
--
-- KEYS: recent, count [, docs, sketches, overflows, table_1 .. table_m]
--   recent and count only: commit only, the caller writes the rest (a sharded
--   index: its tables and sketches are in other slots)
-- ARGV: m, max_d, min_equal, bucket_cap, since, lag, ring,
--       then per item: fp, doc_id, sketch, field_1 .. field_m
--   since < 0: plain add, no check (add / add_many)
--   since >= 0: single item; if an add numbered since - lag or later (and still in
--               the ring) is within max_d bits of fp and its sketch agrees with
--               the item's in at least min_equal slots, return {its fp, doc_id,
--               sketch} and add nothing (a concurrent writer won the race)
-- Returns: false when added (or nothing to add), else the blocker.

local m = tonumber(ARGV[1])
local max_d = tonumber(ARGV[2])
local min_equal = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local since = tonumber(ARGV[5])
local lag = tonumber(ARGV[6])
local ring = tonumber(ARGV[7])
local recent, count = KEYS[1], KEYS[2]
local first = 8

if since >= 0 then
  local fp, sketch = ARGV[first], ARGV[first + 2]
  local width = #sketch
  local n = tonumber(redis.call('GET', count) or '0') - math.max(0, since - lag)
  if n > 0 then
    -- Ring entries are fp .. sketch .. doc_id, newest first.
    for _, entry in ipairs(redis.call('LRANGE', recent, 0, n - 1)) do
      if find_near(string.sub(entry, 1, 8), fp, max_d, 1)
        and equal_slots(string.sub(entry, 9, 8 + width), sketch) >= min_equal then
        return {string.sub(entry, 1, 8), string.sub(entry, 9 + width),
          string.sub(entry, 9, 8 + width)}
      end
    end
  end
end

-- Writes, where the index's keys share the ring's slot.
local function write(item)
  local docs, sketches, overflows = KEYS[3], KEYS[4], KEYS[5]
  local fp, doc_id, sketch = ARGV[item], ARGV[item + 1], ARGV[item + 2]
  -- An identical fingerprint is already indexed: keep the first doc_id and do
  -- not store the value twice in every bucket. (The caller compared its
  -- sketch already: a page whose fingerprint is taken but whose text differs
  -- is unique, just not indexed a second time.)
  if redis.call('HSETNX', docs, fp, doc_id) == 0 then
    return
  end
  redis.call('HSET', sketches, fp, sketch)
  for t = 1, m do
    local field = ARGV[item + 2 + t]
    local bucket = redis.call('HGET', KEYS[5 + t], field) or ''
    if #bucket >= cap * 8 then
      -- Full bucket (a templated site): the fingerprint stays reachable
      -- through its other tables; the counter tells operators it happens.
      redis.call('INCR', overflows)
    else
      redis.call('HSET', KEYS[5 + t], field, bucket .. fp)
    end
  end
end

local stride = m + 3
local added = 0
for item = first, #ARGV, stride do
  if #KEYS > 2 then
    write(item)
  end
  redis.call('LPUSH', recent, ARGV[item] .. ARGV[item + 2] .. ARGV[item + 1])
  added = added + 1
end
if added > 0 then
  redis.call('LTRIM', recent, 0, ring - 1)
  redis.call('INCRBY', count, added)
end
return false
