-- BlockQueueUntil (url-frontier): the IP starts no fetch before ARGV[2] (epoch s).
-- It never shortens a block: blocked_until also holds 429/503 backoff and quarantine,
-- and an operator must not cut those short (invariant 7).
-- KEYS[1] the IP's politeness state (P:ip:<ip>), KEYS[2] the ready heap (P:ready),
-- one slot. ARGV[1] ip, ARGV[2] until. Returns 1 if the block grew, else 0.
local ip, until_at = ARGV[1], tonumber(ARGV[2])
local blocked = tonumber(redis.call('HGET', KEYS[1], 'blocked_until') or '') or 0
if blocked >= until_at then return 0 end
redis.call('HSET', KEYS[1], 'blocked_until', ARGV[2])
-- lease.lua takes IPs by ready-heap score without re-reading blocked_until: a waiting
-- IP moves to the new time. One off the heap (in flight, or without a back queue)
-- reads blocked_until when it is scheduled again.
local due = redis.call('ZSCORE', KEYS[2], ip)
if due and tonumber(due) < until_at then redis.call('ZADD', KEYS[2], until_at, ip) end
return 1
