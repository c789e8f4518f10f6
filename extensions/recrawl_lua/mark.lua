-- `scrapy recrawl`: make the given stored URLs due at ARGV[1] (earlier only), unless
-- a worker has claimed them (their re-fetch is queued or under way already).
-- KEYS[1] recrawl_due. ARGV[2] doc key prefix, ARGV[3..] fps.
-- Returns {made due, already due, claimed}.
local now, prefix = tonumber(ARGV[1]), ARGV[2]
local moved, already, claimed = 0, 0, 0
for i = 3, #ARGV do
  local fp = ARGV[i]
  local due = tonumber(redis.call('ZSCORE', KEYS[1], fp) or '')
  if due then
    if tonumber(redis.call('HGET', prefix .. fp, 'claimed') or '0') > now then
      claimed = claimed + 1
    elseif due <= now then
      already = already + 1
    else
      redis.call('ZADD', KEYS[1], now, fp)
      moved = moved + 1
    end
  end
end
return {moved, already, claimed}
