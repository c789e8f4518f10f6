-- Record one fetch of a stored URL: its state, its change-rate histogram bucket and
-- its next due time, together. An observation older than the stored one (a slow
-- worker losing a race) changes nothing.
-- KEYS[1] recrawl_due, KEYS[2] recrawl_rates, KEYS[3] the URL's doc hash.
-- ARGV[1] JSON: fp, at, fields (name -> value, '' deletes), bucket, due; gone = forget.
local A = cjson.decode(ARGV[1])
local stored_at = tonumber(redis.call('HGET', KEYS[3], 'at') or '0')
if tonumber(A.at) < stored_at then return 0 end
local old = redis.call('HGET', KEYS[3], 'bucket')
if old then
  if redis.call('HINCRBY', KEYS[2], old, -1) <= 0 then redis.call('HDEL', KEYS[2], old) end
end
if A.gone then
  redis.call('DEL', KEYS[3])
  redis.call('ZREM', KEYS[1], A.fp)
  return 1
end
for name, value in pairs(A.fields) do
  if value == '' then
    redis.call('HDEL', KEYS[3], name)
  else
    redis.call('HSET', KEYS[3], name, value)
  end
end
redis.call('HSET', KEYS[3], 'bucket', A.bucket)
redis.call('HINCRBY', KEYS[2], A.bucket, 1)
redis.call('ZADD', KEYS[1], A.due, A.fp)
return 1
