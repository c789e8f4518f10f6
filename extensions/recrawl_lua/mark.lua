-- `scrapy recrawl`: make the given stored URLs due at ARGV[1] (earlier only), unless
-- a worker has claimed them (their re-fetch is already under way).
-- KEYS[1] recrawl_due. ARGV[2] doc key prefix, ARGV[3..] fps.
local now, prefix, moved = tonumber(ARGV[1]), ARGV[2], 0
for i = 3, #ARGV do
  local fp = ARGV[i]
  local due = tonumber(redis.call('ZSCORE', KEYS[1], fp) or '')
  local claimed = tonumber(redis.call('HGET', prefix .. fp, 'claimed') or '0')
  if due and due > now and claimed <= now then
    redis.call('ZADD', KEYS[1], now, fp)
    moved = moved + 1
  end
end
return moved
