-- Shared helpers, included by the index scripts (`-- include: hamming`; Redis
-- scripts cannot call one another, state/lua.py assembles them). Fingerprints
-- are 8-byte big-endian strings; Redis Lua numbers are doubles, so 64-bit
-- values are never formed: the distance is summed byte by byte from a 256-entry
-- popcount table (LuaBitOp's bit.bxor on bytes).

local POP = {[0] = 0}
for i = 1, 255 do
  POP[i] = POP[bit.rshift(i, 1)] + bit.band(i, 1)
end

-- Offset (1-based) of the first fingerprint in packed string s, from offset
-- `from` on, within max_d bits of fp, or nil. Half-way exit: most candidates
-- already differ by more than max_d in their first four bytes.
local function find_near(s, fp, max_d, from)
  local q1, q2, q3, q4, q5, q6, q7, q8 = string.byte(fp, 1, 8)
  for off = from, #s - 7, 8 do
    local a1, a2, a3, a4, a5, a6, a7, a8 = string.byte(s, off, off + 7)
    local d = POP[bit.bxor(a1, q1)] + POP[bit.bxor(a2, q2)]
      + POP[bit.bxor(a3, q3)] + POP[bit.bxor(a4, q4)]
    if d <= max_d then
      d = d + POP[bit.bxor(a5, q5)] + POP[bit.bxor(a6, q6)]
        + POP[bit.bxor(a7, q7)] + POP[bit.bxor(a8, q8)]
      if d <= max_d then
        return off
      end
    end
  end
  return nil
end

-- Number of equal 16-bit slots of two sketches of the same length.
local function equal_slots(a, b)
  local n = 0
  for off = 1, math.min(#a, #b) - 1, 2 do
    if string.sub(a, off, off + 1) == string.sub(b, off, off + 1) then
      n = n + 1
    end
  end
  return n
end
