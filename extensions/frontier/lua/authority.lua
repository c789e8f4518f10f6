-- Queued records without their URL's authority: nearly all of an IP's URLs share one
-- host, a quarter of a record at web scale (issue 15). An IP's home authority is the
-- first one queued for it, never changed, so an elided record can always be restored;
-- another host on the IP (shared hosting) keeps its own. Elided, the URL part starts
-- with '/', which an authority cannot. pop_back restores: leases see whole records.
-- Only compact http(s) records (admission/records.py), marks "R|", "P|", "C|", "F|" may
-- lead.
-- Keys: K.ip_home (HGET, HSETNX): ip -> home authority.
local HOME = {}  -- ip -> its home authority (false: none yet), read once per call

-- Where the URL part of `rec` starts, or nil for a record that is never elided.
local function url_start(rec)
  local s = 1
  while true do
    local mark = string.sub(rec, s, s + 1)
    if mark ~= 'R|' and mark ~= 'P|' and mark ~= 'C|' and mark ~= 'F|' then break end
    s = s + 2
  end
  if string.byte(rec, s) ~= 126 then return nil end  -- '~': not a compact record
  local bar = string.find(rec, '|', s, true)
  if not bar then return nil end
  -- Fields t,s,d,u,x (trailing empty ones cut): skip three commas to the scheme u.
  local p = s + 1
  for _ = 1, 3 do
    p = string.find(rec, ',', p, true)
    if not p or p > bar then return bar + 1 end  -- no u, no x: https, no JSON
    p = p + 1
  end
  local comma = string.find(rec, ',', p, true)
  local scheme, size = nil, 0
  if comma and comma < bar then
    scheme, size = string.sub(rec, p, comma - 1), tonumber(string.sub(rec, comma + 1, bar - 1))
  else
    scheme = string.sub(rec, p, bar - 1)
  end
  if scheme == '-' then return nil end  -- a whole URL of another scheme
  size = size or 0
  -- x counts characters (Python's len): with a non-ASCII one the URL is not x bytes on.
  if size > 0 and string.find(string.sub(rec, bar + 1, bar + size), '[\128-\255]') then
    return nil
  end
  return bar + 1 + size
end

local function home_of(ip)
  local home = HOME[ip]
  if home == nil then
    home = redis.call('HGET', K.ip_home, ip) or false
    HOME[ip] = home
  end
  return home
end

-- `rec` as it is queued for `ip`: without its authority if that is the IP's home.
local function elide_authority(ip, rec)
  local start = url_start(rec)
  if not start then return rec end
  local slash = string.find(rec, '/', start, true)
  if not slash or slash == start then return rec end
  local authority = string.sub(rec, start, slash - 1)
  local home = home_of(ip)
  if not home then
    redis.call('HSETNX', K.ip_home, ip, authority)
    home = authority
    HOME[ip] = home
  end
  if home ~= authority then return rec end
  return string.sub(rec, 1, start - 1) .. string.sub(rec, slash)
end

-- The whole record of one popped from `ip`'s queue.
local function restore_authority(ip, rec)
  local start = url_start(rec)
  if not start or string.byte(rec, start) ~= 47 then return rec end  -- '/': elided
  local home = home_of(ip)
  if not home then return rec end  -- cannot happen: the home is never removed
  return string.sub(rec, 1, start - 1) .. home .. string.sub(rec, start)
end
