-- include: util
-- URL-seen: this shard's scalable Bloom filter (extensions/admission/bloom.py), checked
-- and set inside the admit script, so a URL is marked seen in the step that queues it.
-- Keys: K.seen_bloom (the generations' parameters and counts), F.bloom .. '<g>:<s>'
-- (bitmap segment s of generation g), K.seen (the exact set: with cfg.seen.exact it settles
-- Bloom hits; a set older than the filter is checked on every Bloom miss as well).
-- A seen key is a 16-hex fingerprint: its halves are the two hashes of double hashing,
-- position j = (h1 + j * h2) mod m (Kirsch and Mitzenmacher), and h1's top bits pick the
-- segment: every position of a key sits in one segment, a Bloom filter of its share.
local BLOOM_LN2 = math.log(2)
local bloom = nil  -- {gens = {...}, legacy = bool}, read once per script call

local function bloom_params(g)
  local c = CFG.seen
  local n = math.floor(c.capacity * c.growth ^ (g - 1))
  -- Each generation halves the error rate: 1/ln2 more bits per key (ln(2) / ln2^2).
  local bits_per_key = c.bits_per_key + (g - 1) / BLOOM_LN2
  local bits = math.ceil(n * bits_per_key)
  local segments = math.ceil(bits / c.segment_bits)
  return {n = n, k = math.max(1, math.floor(bits_per_key * BLOOM_LN2 + 0.5)),
          m = math.ceil(bits / segments), s = segments, c = 0}
end

local function bloom_new_generation()
  local g = #bloom.gens + 1
  local p = bloom_params(g)
  bloom.gens[g] = p
  -- SETBIT grows a string by doubling below 1 MB (sdsMakeRoomFor): allocate each
  -- segment once, at its size (above 1 MB growth adds at most 1 MB).
  local bytes = math.ceil(p.m / 8)
  for segment = 0, p.s - 1 do
    local bitmap = F.bloom .. g .. ':' .. segment
    if bytes <= 1048576 then
      redis.call('SET', bitmap, string.rep('\0', bytes))
    else
      redis.call('SETBIT', bitmap, p.m - 1, 0)
    end
  end
  redis.call('HSET', K.seen_bloom, 'g', g, 'n' .. g, p.n, 'k' .. g, p.k, 'm' .. g, p.m,
             's' .. g, p.s, 'c' .. g, 0)
  stat('seen_bloom_generations')
  if g > 1 then
    redis.log(redis.LOG_WARNING, string.format(
      'URL-seen %s: Bloom generation %d started (%d keys, k=%d)', K.seen_bloom, g, p.n, p.k))
  end
end

local function bloom_load()
  if bloom then return end
  local raw = redis.call('HGETALL', K.seen_bloom)
  local h = {}
  for i = 1, #raw, 2 do h[raw[i]] = tonumber(raw[i + 1]) end
  bloom = {gens = {}, legacy = h.legacy == 1}
  for g = 1, h.g or 0 do
    bloom.gens[g] = {n = h['n' .. g], k = h['k' .. g], m = h['m' .. g], s = h['s' .. g],
                     c = h['c' .. g] or 0}
  end
  if #bloom.gens == 0 then
    -- A set older than the filter holds keys the filter never saw.
    bloom.legacy = redis.call('EXISTS', K.seen) == 1
    redis.call('HSET', K.seen_bloom, 'legacy', bloom.legacy and 1 or 0)
    bloom_new_generation()
  end
end

-- The bitmap segment of `key` in generation g, its first position and its step.
local function bloom_hashes(gen, g, key)
  if #key ~= 16 or not string.match(key, '^%x+$') then key = redis.sha1hex(key) end
  local h1 = tonumber(string.sub(key, 1, 8), 16)
  local h2 = tonumber(string.sub(key, 9, 16), 16) % (gen.m - 1) + 1  -- never 0 mod m
  return F.bloom .. g .. ':' .. math.floor(h1 * gen.s / 4294967296), h1, h2
end

-- The first GETBIT settles most new keys (its bit is 0 with the fill's odds); a key it
-- does not settle has its other k - 1 bits read by one BITFIELD (a duplicate costs 2
-- calls, not k). Setting takes one BITFIELD of k SETs (measured: cheaper than k SETBITs).
local function bloom_has(g, key)
  local gen = bloom.gens[g]
  local bitmap, h1, h2 = bloom_hashes(gen, g, key)
  if redis.call('GETBIT', bitmap, h1 % gen.m) == 0 then return false end
  if gen.k == 1 then return true end
  local args = {}
  for j = 1, gen.k - 1 do
    args[#args + 1] = 'GET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (h1 + j * h2) % gen.m
  end
  for _, bit in ipairs(redis.call('BITFIELD', bitmap, unpack(args))) do
    if bit == 0 then return false end
  end
  return true
end

-- Was `key` marked seen (by seen_mark)? Bloom hits are final unless the exact set is kept.
local function seen_before(key)
  bloom_load()
  for g = #bloom.gens, 1, -1 do
    if bloom_has(g, key) then
      if not CFG.seen.exact then return true end
      if redis.call('SISMEMBER', K.seen, key) == 1 then return true end
      stat('seen_bloom_false_positive')  -- measured: the exact set says no
      return false
    end
  end
  if bloom.legacy then return redis.call('SISMEMBER', K.seen, key) == 1 end
  return false
end

local function bloom_alert(g, gen)
  stat('seen_bloom_fill_alert')
  redis.log(redis.LOG_WARNING, string.format(
    'URL-seen %s: Bloom generation %d holds %d keys of its %d (alert at %d%%)',
    K.seen_bloom, g, gen.c, gen.n, math.floor(CFG.seen.fill_alert * 100)))
end

-- The generations' inserted counts go back to Redis once per call (every script that
-- marks keys calls this before it replies), not one HINCRBY per key.
local function seen_flush()
  if not bloom then return end
  for g, gen in ipairs(bloom.gens) do
    if gen.dirty then
      redis.call('HSET', K.seen_bloom, 'c' .. g, gen.c)
      gen.dirty = false
    end
  end
end

-- Mark `key` seen: into the newest generation (a full one first starts the next).
local function seen_mark(key)
  bloom_load()
  if CFG.seen.exact then redis.call('SADD', K.seen, key) end
  local g = #bloom.gens
  local gen = bloom.gens[g]
  local bitmap, h1, h2 = bloom_hashes(gen, g, key)
  local args = {}
  for j = 0, gen.k - 1 do
    args[#args + 1] = 'SET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (h1 + j * h2) % gen.m
    args[#args + 1] = 1
  end
  local new = false
  for _, old in ipairs(redis.call('BITFIELD', bitmap, unpack(args))) do
    if old == 0 then new = true end
  end
  if not new then return end
  gen.c = gen.c + 1
  gen.dirty = true
  if gen.c == math.ceil(gen.n * CFG.seen.fill_alert) then bloom_alert(g, gen) end
  if gen.c >= gen.n then
    seen_flush()
    bloom_new_generation()
  end
end
