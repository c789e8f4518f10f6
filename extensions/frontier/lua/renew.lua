-- Lease renewal (leases.py, LeaseRenewal): a lease its worker still holds (a page whose
-- body is still being stored, a robots.txt fetch's redirect hops) is kept alive, so it is
-- never re-delivered while that worker holds it (DESIGN invariant 4). A lease that is
-- gone (acked, released, or reclaimed after its worker stalled) stays gone (XX), and an
-- expiry is never shortened.
-- KEYS[1] the shard's leases (P:leases). ARGV[1] the new expiry (epoch s), ARGV[2..]
-- the lease ids. Returns how many leases were renewed.
local expires_at, renewed = tonumber(ARGV[1]), 0
for i = 2, #ARGV do
  local current = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if current and tonumber(current) < expires_at then
    redis.call('ZADD', KEYS[1], 'XX', expires_at, ARGV[i])
    renewed = renewed + 1
  end
end
return renewed
