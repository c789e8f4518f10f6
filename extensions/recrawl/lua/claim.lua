-- Claim up to ARGV[2] stored URLs whose re-crawl is due (score <= ARGV[1]): each
-- one's due time moves to the claim's expiry ARGV[3], so a worker that dies before
-- the re-fetch is recorded loses nothing (the URL comes due again), and two workers
-- never claim the same URL at once. Returns {due_left, next_due, {fp, u, etag, lm, cb, d}...}
-- (next_due: the earliest due time still ahead, '' if none).
-- KEYS[1] recrawl_due, KEYS[2] recrawl_claims. ARGV[4] the doc key prefix (same tag).
local now, n, claim_until, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], ARGV[4]
local out = {0, ''}
local fps = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, n)
for _, fp in ipairs(fps) do
  local raw = redis.call('GET', prefix .. fp)
  if raw then
    local doc = cjson.decode(raw)
    redis.call('ZADD', KEYS[1], claim_until, fp)
    redis.call('HSET', KEYS[2], fp, claim_until)
    out[#out + 1] = {fp, doc.u, doc.etag or '', doc.lm or '', doc.cb or '', tostring(doc.d or 0)}
  else
    redis.call('ZREM', KEYS[1], fp)  -- state gone (removed by hand): nothing to re-fetch
  end
end
out[1] = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local ahead = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
if ahead[2] then out[2] = ahead[2] end
return out
