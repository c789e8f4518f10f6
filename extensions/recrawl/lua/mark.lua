-- `scrapy recrawl`: make the given stored URLs due at ARGV[1] (earlier only), unless
-- a worker has claimed them (their re-fetch is queued or under way already).
-- KEYS[1] recrawl_due, KEYS[2] recrawl_claims. ARGV[2..] fps.
-- Returns {made due, already due, claimed}.
local now = tonumber(ARGV[1])
local moved, already, claimed = 0, 0, 0
for i = 2, #ARGV do
  local fp = ARGV[i]
  local due = tonumber(redis.call('ZSCORE', KEYS[1], fp) or '')
  if due then
    if tonumber(redis.call('HGET', KEYS[2], fp) or '0') > now then
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
