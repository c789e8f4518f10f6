-- include: util
-- URL-seen: this shard's scalable Bloom filter (extensions/admission/bloom.py), checked
-- and set inside the admit script, so a URL is marked seen in the step that queues it.
-- Keys: K.seen_bloom (the generations' parameters and counts), F.bloom .. '<g>:<s>'
-- (bitmap segment s of generation g), K.seen (the exact set: with cfg.seen.exact it settles
-- Bloom hits; a set older than the filter is checked on every Bloom miss as well).
-- A seen key is a 16-hex fingerprint, its halves h1 and h2. Two layouts, a field of each
-- generation (K.seen_bloom 'b<g>': block bits; absent in generations made before blocks):
-- standard: position j = (h1 + j * h2) mod m (Kirsch and Mitzenmacher), h1's top bits
-- pick the segment; blocked (every new generation): h1's top bits pick one block of
-- BLOOM_BLOCK_BITS, where all k bits of the key sit (Putze et al. 2007), so a lookup is
-- one GETRANGE and an insert one SETRANGE (measured: a BITFIELD of k = 14 SETs cost ~29 us
-- of Redis CPU, a 512-byte GETRANGE ~2). The block's size keeps the false-positive rate
-- within ~21% of a standard filter's at 20 bits/key (64-byte blocks: 3.3x); its own
-- theory is extensions/admission/bloom.py's fp_theory.
local BLOOM_LN2 = math.log(2)
local BLOOM_BLOCK_BITS = 4096
local BLOOM_MASKS = {128, 64, 32, 16, 8, 4, 2, 1}  -- bit i of a byte, as GETBIT numbers it
-- The per-key loops below use arithmetic, not math.floor or bit.band (a C call per bit
-- is the dearer op in Redis's Lua): x is a whole number below 2^31, so (x - x % d) / d
-- is floor(x / d), and a byte's bit of mask m is set when byte % 2m >= m.
local byte = string.byte
-- {gens = {...}, legacy = bool, probe = the last key seen_before looked up: {key, h1, h2,
-- blocks = its block of each generation}}, read once per script call
local bloom = nil

local function bloom_params(g)
  local c = CFG.seen
  local n = math.floor(c.capacity * c.growth ^ (g - 1))
  -- Each generation halves the error rate: 1/ln2 more bits per key (ln(2) / ln2^2).
  local bits_per_key = c.bits_per_key + (g - 1) / BLOOM_LN2
  -- Whole blocks, at least one per segment, spread evenly over the segments.
  local blocks = math.ceil(n * bits_per_key / BLOOM_BLOCK_BITS)
  local per_segment = math.max(1, math.floor(c.segment_bits / BLOOM_BLOCK_BITS))
  local segments = math.ceil(blocks / per_segment)
  return {n = n, k = math.max(1, math.floor(bits_per_key * BLOOM_LN2 + 0.5)),
          m = math.ceil(blocks / segments) * BLOOM_BLOCK_BITS, s = segments, c = 0,
          b = BLOOM_BLOCK_BITS}
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
             's' .. g, p.s, 'c' .. g, 0, 'b' .. g, p.b)
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
  bloom = {gens = {}, legacy = h.legacy == 1, probe = {blocks = {}}}
  for g = 1, h.g or 0 do
    bloom.gens[g] = {n = h['n' .. g], k = h['k' .. g], m = h['m' .. g], s = h['s' .. g],
                     c = h['c' .. g] or 0, b = h['b' .. g]}
  end
  if #bloom.gens == 0 then
    -- A set older than the filter holds keys the filter never saw.
    bloom.legacy = redis.call('EXISTS', K.seen) == 1
    redis.call('HSET', K.seen_bloom, 'legacy', bloom.legacy and 1 or 0)
    bloom_new_generation()
  end
end

local function bloom_halves(key)
  if #key ~= 16 or not string.match(key, '^%x+$') then key = redis.sha1hex(key) end
  return tonumber(string.sub(key, 1, 8), 16), tonumber(string.sub(key, 9, 16), 16)
end

-- Standard layout: the bitmap segment of `key` in generation g, its first position, step.
local function bloom_hashes(gen, g, h1, h2)
  h2 = h2 % (gen.m - 1) + 1  -- never 0 mod m
  return F.bloom .. g .. ':' .. math.floor(h1 * gen.s / 4294967296), h1, h2
end

-- The first GETBIT settles most new keys (its bit is 0 with the fill's odds); a key it
-- does not settle has its other k - 1 bits read by one BITFIELD (a duplicate costs 2
-- calls, not k).
local function standard_has(gen, g, h1, h2)
  local bitmap, first, step = bloom_hashes(gen, g, h1, h2)
  if redis.call('GETBIT', bitmap, first % gen.m) == 0 then return false end
  if gen.k == 1 then return true end
  local args = {}
  for j = 1, gen.k - 1 do
    args[#args + 1] = 'GET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (first + j * step) % gen.m
  end
  for _, bit in ipairs(redis.call('BITFIELD', bitmap, unpack(args))) do
    if bit == 0 then return false end
  end
  return true
end

-- Blocked layout: the block's bitmap and byte offset, and the seed of the key's k bit
-- positions in it: a Lehmer generator (MINSTD, seeded by h2 and h1's low bits) draws
-- them, as a random-position filter does (double hashing within a block of 4096 bits
-- doubled the false positives: 32 of 200,000 at 20 bits/key, theory 16). Positions
-- are drawn as they are tested: a new key is settled by its first unset bit.
local function block_of(gen, g, h1, h2, cached)
  local per_segment = gen.m / gen.b
  local block = math.floor(h1 * gen.s * per_segment / 4294967296)
  local segment = math.floor(block / per_segment)
  local bitmap = F.bloom .. g .. ':' .. segment
  local seed = ((h1 % 65536) * 4294967296 + h2) % 2147483646 + 1
  local block_bytes = gen.b / 8
  local offset = (block % per_segment) * block_bytes
  if cached then return bitmap, offset, seed end
  return bitmap, offset, seed, redis.call('GETRANGE', bitmap, offset, offset + block_bytes - 1)
end

-- A fresh key's block of each generation is kept (bloom.probe) for its seen_mark.
local function blocked_has(gen, g, h1, h2)
  local _, _, x, block = block_of(gen, g, h1, h2)
  bloom.probe.blocks[g] = block
  local d = 2147483648 / gen.b
  for _ = 1, gen.k do
    x = x * 48271 % 2147483647
    local p = (x - x % d) / d
    local r = p % 8
    local mask = BLOOM_MASKS[r + 1]
    if (byte(block, (p - r) / 8 + 1) or 0) % (mask + mask) < mask then return false end
  end
  return true
end

local function bloom_has(g, h1, h2)
  local gen = bloom.gens[g]
  if gen.b then return blocked_has(gen, g, h1, h2) end
  return standard_has(gen, g, h1, h2)
end

-- Was `key` marked seen (by seen_mark)? Bloom hits are final unless the exact set is kept.
local function seen_before(key)
  bloom_load()
  local h1, h2 = bloom_halves(key)
  -- One probe table per call, refilled (two tables per URL were garbage to collect).
  local probe = bloom.probe
  probe.key, probe.h1, probe.h2 = key, h1, h2
  for g = 1, #bloom.gens do probe.blocks[g] = nil end
  for g = #bloom.gens, 1, -1 do
    if bloom_has(g, h1, h2) then
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

-- Sets `key`'s bits in generation g; whether any was unset (a key new to the filter).
local function standard_set(gen, g, h1, h2)
  local bitmap, first, step = bloom_hashes(gen, g, h1, h2)
  local args = {}
  for j = 0, gen.k - 1 do
    args[#args + 1] = 'SET'
    args[#args + 1] = 'u1'
    args[#args + 1] = (first + j * step) % gen.m
    args[#args + 1] = 1
  end
  local new = false
  for _, old in ipairs(redis.call('BITFIELD', bitmap, unpack(args))) do
    if old == 0 then new = true end
  end
  return new
end

-- The block with the changed bytes, from the first to the last changed one (pieces of
-- the old block between them: cheaper in Lua than all its bytes), and where it starts.
local function block_span(block, changed)
  local at = {}
  for i in pairs(changed) do at[#at + 1] = i end
  if #at == 0 then return nil end
  table.sort(at)
  local parts, from = {}, at[1]
  for _, i in ipairs(at) do
    parts[#parts + 1] = string.sub(block, from, i - 1)
    parts[#parts + 1] = string.char(changed[i])
    from = i + 1
  end
  return at[1], table.concat(parts)
end

-- One SETRANGE of the changed span of the key's block.
local function blocked_set(gen, g, h1, h2, cached)
  local bitmap, offset, x, block
  if cached then
    bitmap, offset, x = block_of(gen, g, h1, h2, true)
    block = cached
  else
    bitmap, offset, x, block = block_of(gen, g, h1, h2)
  end
  local d, changed = 2147483648 / gen.b, {}
  for _ = 1, gen.k do
    x = x * 48271 % 2147483647
    local p = (x - x % d) / d
    local r = p % 8
    local i, mask = (p - r) / 8 + 1, BLOOM_MASKS[r + 1]
    local old = changed[i] or byte(block, i) or 0
    if old % (mask + mask) < mask then changed[i] = old + mask end
  end
  local first, span = block_span(block, changed)
  if not first then return false end
  redis.call('SETRANGE', bitmap, offset + first - 1, span)
  return true
end

-- Mark `key` seen: into the newest generation (a full one first starts the next).
local function seen_mark(key)
  bloom_load()
  if CFG.seen.exact then redis.call('SADD', K.seen, key) end
  local g = #bloom.gens
  local gen = bloom.gens[g]
  local probe = bloom.probe
  local h1, h2, cached = probe.h1, probe.h2, probe.blocks[g]
  if probe.key ~= key then
    h1, h2 = bloom_halves(key)
    cached = nil
  end
  probe.key = nil  -- the key's block changes
  local new
  if gen.b then
    new = blocked_set(gen, g, h1, h2, cached)
  else
    new = standard_set(gen, g, h1, h2)
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
