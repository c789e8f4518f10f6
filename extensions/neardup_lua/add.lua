-- Add fingerprints to a SimhashIndex, optionally refusing near-duplicates of
-- what was added since the caller's snapshot (the commit half of
-- check_and_add; see neardup_index.py for why the probe itself is client-side).
--
-- KEYS: table_1 .. table_m, docs, log, overflows
-- ARGV: m, max_d, bucket_cap, since, then per item: fp, doc_id, field_1 .. field_m
--   since < 0: plain add, no check (add / add_many)
--   since >= 0: single item; if the log holds, from fingerprint number `since`
--               on, one within max_d bits of fp, return that fingerprint and add
--               nothing (a concurrent writer won the race)
-- Returns: false when added (or nothing to add), else the blocking fingerprint.

local m = tonumber(ARGV[1])
local max_d = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local since = tonumber(ARGV[4])
local docs, log, overflows = KEYS[m + 1], KEYS[m + 2], KEYS[m + 3]

if since >= 0 then
  local fp = ARGV[5]
  local recent = redis.call('GETRANGE', log, since * 8, -1)
  local off = find_near(recent, fp, max_d)
  if off then
    return string.sub(recent, off, off + 7)
  end
end

local stride = m + 2
for item = 5, #ARGV, stride do
  local fp, doc_id = ARGV[item], ARGV[item + 1]
  -- An identical fingerprint is already indexed: keep the first doc_id and do
  -- not store the value twice in every bucket.
  if redis.call('HSETNX', docs, fp, doc_id) == 1 then
    for t = 1, m do
      local field = ARGV[item + 1 + t]
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
  elseif since >= 0 then
    return fp
  end
end
return false
