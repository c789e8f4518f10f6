-- Record one fetch of a stored URL: its state (one JSON string: compact, one key per
-- URL), its change-rate histogram bucket, its due time, and the end of its claim,
-- together. An observation older than the stored one (a slow worker losing a race)
-- changes nothing.
-- KEYS[1] recrawl_due, KEYS[2] recrawl_rates, KEYS[3] recrawl_claims, KEYS[4] the doc.
-- ARGV[1] JSON: fp, at, doc (the new state, a JSON string), bucket, due; gone = forget.
local A = cjson.decode(ARGV[1])
local raw = redis.call('GET', KEYS[4])
local old = nil
if raw then
  local stored = cjson.decode(raw)
  if tonumber(A.at) < tonumber(stored.at or 0) then return 0 end
  old = stored.bucket
end
if old then
  if redis.call('HINCRBY', KEYS[2], old, -1) <= 0 then redis.call('HDEL', KEYS[2], old) end
end
redis.call('HDEL', KEYS[3], A.fp)
if A.gone then
  redis.call('DEL', KEYS[4])
  redis.call('ZREM', KEYS[1], A.fp)
  return 1
end
redis.call('SET', KEYS[4], A.doc)
redis.call('HINCRBY', KEYS[2], A.bucket, 1)
redis.call('ZADD', KEYS[1], A.due, A.fp)
return 1
