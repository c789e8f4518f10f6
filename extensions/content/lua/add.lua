-- include: hamming
-- Add fingerprints (with their sketches) to a SimhashIndex, optionally
-- refusing confirmed near-duplicates of what was added since the caller's
-- snapshot (the commit half of check_and_add; see simhash_index.py for why
-- the probe itself is client-side).
--
-- KEYS: table_1 .. table_m, docs, sketches, log, overflows
-- ARGV: m, max_d, min_equal, bucket_cap, since,
--       then per item: fp, doc_id, sketch, field_1 .. field_m
--   since < 0: plain add, no check (add / add_many)
--   since >= 0: single item; if the log holds, from fingerprint number `since`
--               on, one within max_d bits of fp whose sketch agrees with the
--               item's in at least min_equal slots, return that fingerprint
--               and add nothing (a concurrent writer won the race)
-- Returns: false when added (or nothing to add), else the blocking fingerprint.

local m = tonumber(ARGV[1])
local max_d = tonumber(ARGV[2])
local min_equal = tonumber(ARGV[3])
local cap = tonumber(ARGV[4])
local since = tonumber(ARGV[5])
local docs, sketches, log, overflows = KEYS[m + 1], KEYS[m + 2], KEYS[m + 3], KEYS[m + 4]

if since >= 0 then
  local fp, sketch = ARGV[6], ARGV[8]
  local recent = redis.call('GETRANGE', log, since * 8, -1)
  local off = find_near(recent, fp, max_d, 1)
  while off do
    local other = string.sub(recent, off, off + 7)
    local stored = redis.call('HGET', sketches, other)
    if stored and equal_slots(stored, sketch) >= min_equal then
      return other
    end
    off = find_near(recent, fp, max_d, off + 8)
  end
end

local stride = m + 3
for item = 6, #ARGV, stride do
  local fp, doc_id, sketch = ARGV[item], ARGV[item + 1], ARGV[item + 2]
  -- An identical fingerprint is already indexed: keep the first doc_id and do
  -- not store the value twice in every bucket. (The caller compared its
  -- sketch already: a page whose fingerprint is taken but whose text differs
  -- is unique, just not indexed a second time.)
  if redis.call('HSETNX', docs, fp, doc_id) == 1 then
    redis.call('HSET', sketches, fp, sketch)
    for t = 1, m do
      local field = ARGV[item + 2 + t]
      local bucket = redis.call('HGET', KEYS[t], field) or ''
      if #bucket >= cap * 8 then
        -- Full bucket (a templated site): the fingerprint stays reachable
        -- through its other tables; the counter tells operators it happens.
        redis.call('INCR', overflows)
      else
        redis.call('HSET', KEYS[t], field, bucket .. fp)
      end
    end
    redis.call('APPEND', log, fp)
  end
end
return false
