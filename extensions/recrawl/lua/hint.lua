-- Sitemap <lastmod> hints: a stored URL whose copy is older than its lastmod has
-- changed since we fetched it, so it is due now (never later than already due).
-- KEYS[1] recrawl_due. ARGV[1] now, ARGV[2] doc key prefix, ARGV[3..] fp, lastmod pairs.
local now, prefix, moved = ARGV[1], ARGV[2], 0
for i = 3, #ARGV, 2 do
  local fp, lastmod = ARGV[i], tonumber(ARGV[i + 1])
  local raw = redis.call('GET', prefix .. fp)
  if raw and lastmod > tonumber(cjson.decode(raw).at or 0) then
    moved = moved + redis.call('ZADD', KEYS[1], 'LT', 'CH', now, fp)
  end
end
return moved
