-- Crawl-delay of an IP shared by several hosts: the largest among its hosts whose
-- robots.txt is current, so one site's small Crawl-delay never overrides its
-- neighbour's large one, and a Crawl-delay leaves with its expired robots.txt.
-- KEYS[1] the IP's politeness state (P:ip:<ip>): field "cd|<host>" = "delay,expires_at"
-- per host, and crawl_delay = their max (ready_heap.lua reads only that).
-- ARGV[1] host, ARGV[2] its Crawl-delay in s ('' = none), ARGV[3] its robots.txt's
-- expires_at, ARGV[4] now. Returns the IP's crawl_delay as a string, or false (none).
local key, host, now = KEYS[1], ARGV[1], tonumber(ARGV[4])
if ARGV[2] == '' then
  redis.call('HDEL', key, 'cd|' .. host)
else
  redis.call('HSET', key, 'cd|' .. host, ARGV[2] .. ',' .. ARGV[3])
end
local best = nil
local fields = redis.call('HGETALL', key)
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 3) == 'cd|' then
    local delay, expires = string.match(fields[i + 1], '^([^,]+),(.+)$')
    delay, expires = tonumber(delay), tonumber(expires)
    if not delay or not expires or expires <= now then
      redis.call('HDEL', key, fields[i])
    elseif not best or delay > best then
      best = delay
    end
  end
end
if best then
  redis.call('HSET', key, 'crawl_delay', best)
  return tostring(best)
end
redis.call('HDEL', key, 'crawl_delay')
return false
