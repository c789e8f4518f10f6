-- Append a fingerprint to one bucket of a sharded SimhashIndex (simhash_keys.py):
-- the write half of an add whose commit add.lua made on the ring's slot.
--
-- KEYS: table, overflows (both in the bucket's shard)
-- ARGV: field, fp, bucket_cap
-- Returns: 1 when appended, 0 when the bucket was full (counted in overflows).

local bucket = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if #bucket >= tonumber(ARGV[3]) * 8 then
  -- Full bucket (a templated site): reachable through its other tables.
  redis.call('INCR', KEYS[2])
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], bucket .. ARGV[2])
return 1
