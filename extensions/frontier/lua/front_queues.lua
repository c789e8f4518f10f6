-- include: util
-- Front queues: one list per priority of "ip|record" entries that wait for their IP
-- to get a back queue. The router pushes to them and pops from the one chosen here.
-- Keys: F.front .. p for p = 0 .. #CFG.weights - 1 (LLEN).

-- Weighted random choice among non-empty front queues: low priorities are
-- chosen less often but never starved.
local function pick_front()
  local total, lens = 0, {}
  for p = 1, #CFG.weights do
    lens[p] = redis.call('LLEN', F.front .. (p - 1))
    if lens[p] > 0 then total = total + CFG.weights[p] end
  end
  if total == 0 then return nil end
  local r = rand() * total
  local last = nil
  for p = 1, #CFG.weights do
    if lens[p] > 0 then
      last = p - 1
      r = r - CFG.weights[p]
      if r < 0 then return last end
    end
  end
  return last
end
