// A host's URL-seen set as a Bloom filter (issue 40, part 2's opt-in
// approximate mode, `frontier.seen: bloom`): for crawls that accept a stated
// loss of pages for about a third of the exact set's memory. A Bloom filter
// has no false negatives, so a URL is never fetched twice; a false positive
// (a new URL whose bits other URLs happen to have set) silently skips it, and
// every page only reachable through it.
//
// A host's size is unknown in advance, so the filter is a scalable series
// (Almeida et al., "Scalable Bloom Filters", 2007): level i (1, 2, …) holds
// BLOOM_FIRST_CAPACITY × 2^(i−1) URLs at a false-positive rate of
// rate × (1 − BLOOM_TIGHTENING) × BLOOM_TIGHTENING^(i−1), so the levels'
// rates sum to at most `rate` however many there are, and a host of a few
// URLs keeps a few hundred bytes. URLs go into the newest level; a test asks
// every level. Level i has ⌈capacity × ln(1/p) / ln²2⌉ bits (rounded up to
// whole bytes) and k = round(log2(1/p)) bit positions a URL: the k outputs
// of a xorshift32 generator seeded with the URL's 64-bit fingerprint
// (seenFingerprint64: its two halves XORed) and the level, each mod the
// level's bits. Not double hashing (h1 + j·h2): on levels of a few thousand
// bits its positions repeat within a URL often enough to give 15–30 % more
// false positives than the fill predicts (measured); the generator's match it.
//
// In Redis: one string a host, the host's `seen` key itself (so an older
// release that expects a HASH there fails with WRONGTYPE instead of keeping a
// second seen set beside it): a 16-byte header, the URLs added as decimal
// digits, then the levels one after another, each its bits (bit 0 is a
// byte's high bit, as SETBIT and BITFIELD count) and 4 bytes (big-endian)
// counting those set. The string is rewritten whole, at its
// exact new size, when a level is added (Redis grows a string it extends by
// SETRANGE to twice the size asked, which would double the filter's memory);
// that happens once per doubling of the host, so it costs O(1) a URL.
//
// The expected number of URLs skipped: a URL's fate is decided when it is
// first tested, and is a skip with the filter's false-positive probability
// then, p = 1 − Π(1 − (ones/m)^k) over the levels (ones: the bits a level has
// set, m: its bits), the filter as it really is filled, not as it is on
// average (a small level's fill strays by tens of per cent from the mean, so
// its false positives do too). Each URL the filter answers "new" stands for
// 1 / (1 − p) first tests in expectation, of which p / (1 − p) were
// skipped: the enqueue scripts add that up in the host's stats
// (`seenSkipped`, in millionths of a URL) and the host records sum it into the
// campaign's totals. On average p is (1 − e^(−k·n/m))^k a level holding n
// URLs (bloomFalsePositive below: the sizing model).

/** URLs the first level holds: a host of a few URLs keeps a few hundred bytes. */
export const BLOOM_FIRST_CAPACITY = 128;
/** Each level's false-positive rate is this times the one before's (and its capacity twice). */
export const BLOOM_TIGHTENING = 0.75;
/** The string's header: the URLs added, in decimal. */
export const BLOOM_HEADER_BYTES = 16;
/** After each level's bits: how many of them are set (a big-endian uint32). */
export const BLOOM_ONES_BYTES = 4;
/** The field of a host's stats, record and the campaign's totals that holds the expected URLs skipped. */
export const SEEN_SKIPPED_FIELD = 'seenSkipped';
/** The stats field's unit: the expected URLs skipped, in millionths (HINCRBY keeps integers). */
export const BLOOM_SKIPPED_SCALE = 1_000_000;

export interface BloomLevel {
  /** URLs it holds when full. */
  capacity: number;
  /** Its false-positive rate when full. */
  rate: number;
  /** Bit positions a URL. */
  k: number;
  /** Its bits' size in bytes (its count of bits set follows them). */
  bytes: number;
  /** URLs held by the levels before it. */
  before: number;
}

/** The summary's and `crawler status`'s line for a Bloom filter campaign. */
export function seenFilterLine(f: { rate: number; expectedSkipped: number }): string {
  return `expected URLs skipped by the Bloom filter: ${f.expectedSkipped.toFixed(1)} (rate ${f.rate})`;
}

/** Level i (1-based) of a filter at `rate`: what the Lua computes the same way (BLOOM_LUA). */
export function bloomLevel(rate: number, i: number): BloomLevel {
  const capacity = BLOOM_FIRST_CAPACITY * 2 ** (i - 1);
  const p = rate * (1 - BLOOM_TIGHTENING) * BLOOM_TIGHTENING ** (i - 1);
  const k = Math.max(1, Math.round(Math.log2(1 / p)));
  const bits = Math.ceil((capacity * Math.log(1 / p)) / (Math.LN2 * Math.LN2));
  return { capacity, rate: p, k, bytes: Math.ceil(bits / 8), before: BLOOM_FIRST_CAPACITY * (2 ** (i - 1) - 1) };
}

/** The levels a host that added `n` URLs has (0 before its first). */
export function bloomLevelsFor(n: number): number {
  let levels = 0;
  while (n > BLOOM_FIRST_CAPACITY * (2 ** levels - 1)) levels++;
  return levels;
}

/** The string's size in bytes for a host that added `n` URLs. */
export function bloomBytes(rate: number, n: number): number {
  const levels = bloomLevelsFor(n);
  let bytes = levels > 0 ? BLOOM_HEADER_BYTES : 0;
  for (let i = 1; i <= levels; i++) bytes += bloomLevel(rate, i).bytes + BLOOM_ONES_BYTES;
  return bytes;
}

/** A level's false-positive probability holding `n` URLs, on average: (1 − e^(−k·n/m))^k. */
export function levelFalsePositive(level: BloomLevel, n: number): number {
  return (1 - Math.exp((-level.k * n) / (level.bytes * 8))) ** level.k;
}

/** The chance a URL the host has not added is found in its filter once it added `n`: the union of its levels'. */
export function bloomFalsePositive(rate: number, n: number): number {
  let miss = 1;
  const levels = bloomLevelsFor(n);
  for (let i = 1; i <= levels; i++) {
    const lv = bloomLevel(rate, i);
    miss *= 1 - levelFalsePositive(lv, Math.min(lv.capacity, n - lv.before));
  }
  return 1 - miss;
}

/** The expected URLs skipped while a host added its first `n` URLs: Σ p / (1 − p), p before each add. */
export function bloomExpectedSkipped(rate: number, n: number): number {
  let sum = 0;
  for (let j = 0; j < n; j++) {
    const p = bloomFalsePositive(rate, j);
    sum += p / (1 - p);
  }
  return sum;
}

/**
 * Lua: the Bloom filter's functions, for SEEN_LUA (src/redis/seen-set.ts),
 * which calls them for a campaign whose seen mode is `b<rate>`: bloomOpen
 * reads the header, bloomHasAll tests a batch (the whole string in one GET
 * up to 8 MB, else a GETRANGE a bit, each level's test stopping at its first clear bit), bloomAddAll
 * queues the new ones' bits, bloomClose grows the string if a level is due,
 * writes the bits, the levels' counts and the header, and adds up the expected skips.
 */
export const BLOOM_LUA = `
local BLOOM_C0, BLOOM_TIGHT, BLOOM_HEAD, BLOOM_ONES = ${BLOOM_FIRST_CAPACITY}, ${BLOOM_TIGHTENING}, ${BLOOM_HEADER_BYTES}, ${BLOOM_ONES_BYTES}
local LN2SQ = math.log(2) * math.log(2)
-- BITFIELD SET operations a call: their arguments stay below Lua's unpack limit (8000).
local BLOOM_CHUNK = 1500
-- Up to this size (about 2.5 million URLs a host) a test reads the whole string, a copy of a few
-- milliseconds at most; past it, each byte it needs (a call each: ~30 a URL).
local BLOOM_WHOLE = 8388608
local function bloomLevel(st, i)
  local lv = st.levels[i]
  if lv then return lv end
  local cap = BLOOM_C0 * 2 ^ (i - 1)
  local p = st.rate * (1 - BLOOM_TIGHT) * BLOOM_TIGHT ^ (i - 1)
  local k = math.max(1, math.floor(math.log(1 / p) / math.log(2) + 0.5))
  local bits = math.ceil(cap * math.log(1 / p) / LN2SQ)
  local bytes = math.ceil(bits / 8)
  local start = BLOOM_HEAD
  if i > 1 then
    local prev = bloomLevel(st, i - 1)
    start = prev.ones + BLOOM_ONES
  end
  lv = {cap = cap, k = k, bytes = bytes, bits = bytes * 8, start = start, ones = start + bytes, before = BLOOM_C0 * (2 ^ (i - 1) - 1)}
  st.levels[i] = lv
  return lv
end
-- The levels a host that added n URLs has.
local function bloomLevelsFor(n)
  local l = 0
  while n > BLOOM_C0 * (2 ^ l - 1) do l = l + 1 end
  return l
end
local function bloomOpen(st, key, rate)
  st.bloom, st.rate, st.levels, st.sets, st.ins, st.skipped = true, rate, {}, {}, {}, 0
  local head = redis.call('GETRANGE', key, 0, BLOOM_HEAD - 1)
  st.count = tonumber(head) or 0
  st.held = bloomLevelsFor(st.count)
end
-- A fingerprint's seed: its two 32-bit halves XORed (never 0, which xorshift keeps at 0).
local function bloomSeed(fp)
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(fp, 1, 8)
  local x = bit.bxor(((b1 * 256 + b2) * 256 + b3) * 256 + b4, ((b5 * 256 + b6) * 256 + b7) * 256 + b8)
  if x == 0 then x = 1 end
  return x
end
local bxor, lshift, rshift = bit.bxor, bit.lshift, bit.rshift
-- The level's own start for the generator: the seed XOR the level times the golden ratio's 32 bits.
local function bloomStart(x, i)
  local y = bxor(x, (i * 2654435769) % 4294967296)
  if y == 0 then y = 1 end
  return y
end
-- The bit offsets (from the string's start) of a fingerprint in level i.
local function bloomBits(st, fp, i, out)
  local lv = bloomLevel(st, i)
  local x = bloomStart(bloomSeed(fp), i)
  local base, m = lv.start * 8, lv.bits
  for j = 1, lv.k do
    x = bxor(x, lshift(x, 13))
    x = bxor(x, rshift(x, 17))
    x = bxor(x, lshift(x, 5))
    out[#out + 1] = base + (x % 4294967296) % m
  end
end
-- The bit of each position within its byte (bit 0 the high one, as SETBIT counts).
local BLOOM_MASK = {[0] = 128, 64, 32, 16, 8, 4, 2, 1}
-- Whether a fingerprint (its seed x) is in level lv (number i) of the string s: its k bits all set (stops at the first one clear).
local function bloomIn(s, lv, i, x)
  local base, m, byte, band = lv.start * 8, lv.bits, string.byte, bit.band
  x = bloomStart(x, i)
  for j = 1, lv.k do
    x = bxor(x, lshift(x, 13))
    x = bxor(x, rshift(x, 17))
    x = bxor(x, lshift(x, 5))
    local o = base + (x % 4294967296) % m
    local r = o % 8
    if band(byte(s, (o - r) / 8 + 1), BLOOM_MASK[r]) == 0 then return false end
  end
  return true
end
-- The same, reading each byte it needs from the key (a filter too large to read whole each script).
local function bloomInKey(key, lv, i, x)
  local base, m, byte, band = lv.start * 8, lv.bits, string.byte, bit.band
  x = bloomStart(x, i)
  for j = 1, lv.k do
    x = bxor(x, lshift(x, 13))
    x = bxor(x, rshift(x, 17))
    x = bxor(x, lshift(x, 5))
    local o = base + (x % 4294967296) % m
    local r = o % 8
    local at = (o - r) / 8
    if band(byte(redis.call('GETRANGE', key, at, at)), BLOOM_MASK[r]) == 0 then return false end
  end
  return true
end
local function bloomHasAll(st, fps)
  local out = {}
  if st.held == 0 then
    for i = 1, #fps do out[i] = false end
    return out
  end
  local last = bloomLevel(st, st.held)
  if last.start + last.bytes <= BLOOM_WHOLE then
    -- Newest level first: it holds about half the host's URLs, so a URL seen before is found soonest.
    local s = redis.call('GET', st.key)
    local lvs = {}
    for l = 1, st.held do lvs[l] = bloomLevel(st, l) end
    for i = 1, #fps do
      local x = bloomSeed(fps[i])
      local found = false
      for l = st.held, 1, -1 do
        if bloomIn(s, lvs[l], l, x) then
          found = true
          break
        end
      end
      out[i] = found
    end
    return out
  end
  -- A large filter: each bit asked for on its own (GETRANGE of its byte), stopping at the first clear one.
  for i = 1, #fps do
    local x = bloomSeed(fps[i])
    local found = false
    for l = st.held, 1, -1 do
      if bloomInKey(st.key, bloomLevel(st, l), l, x) then
        found = true
        break
      end
    end
    out[i] = found
  end
  return out
end
-- Each URL goes into the newest level of the host as it is then (its bits set by bloomClose).
local function bloomAddAll(st, fps)
  for i = 1, #fps do
    local l = bloomLevelsFor(st.count + 1)
    bloomBits(st, fps[i], l, st.sets)
    st.ins[#st.ins + 1] = l
    st.count = st.count + 1
  end
end
-- Grows the string if a level is due, sets the new URLs' bits (in order, the old values back),
-- and from those adds up the expected skips: before each URL, p = 1 − Π(1 − (onesᵢ/mᵢ)^kᵢ) over
-- the levels as they were filled then, and p / (1 − p) skipped.
local function bloomClose(st)
  if #st.sets == 0 then return end
  local levels = bloomLevelsFor(st.count)
  if levels > st.held then
    local last = bloomLevel(st, levels)
    local size = last.ones + BLOOM_ONES
    local cur = redis.call('GET', st.key) or string.rep('\\0', BLOOM_HEAD)
    redis.call('SET', st.key, cur .. string.rep('\\0', size - #cur))
  end
  local ones = {}
  for l = 1, levels do
    local v = redis.call('GETRANGE', st.key, bloomLevel(st, l).ones, bloomLevel(st, l).ones + BLOOM_ONES - 1)
    ones[l] = #v == BLOOM_ONES and struct.unpack('>I4', v) or 0
  end
  local old = {}
  for c = 1, #st.sets, BLOOM_CHUNK do
    local args = {}
    for j = c, math.min(c + BLOOM_CHUNK - 1, #st.sets) do
      args[#args + 1] = 'SET'
      args[#args + 1] = 'u1'
      args[#args + 1] = st.sets[j]
      args[#args + 1] = 1
    end
    local got = redis.call('BITFIELD', st.key, unpack(args))
    for j = 1, #got do old[c + j - 1] = got[j] end
  end
  -- Levels below the one a URL goes into are done filling: their product is kept (below[l]).
  local below, at, changed = {[1] = 1}, 1, {}
  for i = 1, #st.ins do
    local l = st.ins[i]
    if not below[l] then
      local miss = 1
      for m = 1, l - 1 do
        local lv = bloomLevel(st, m)
        miss = miss * (1 - (ones[m] / lv.bits) ^ lv.k)
      end
      below[l] = miss
    end
    local lv = bloomLevel(st, l)
    local p = 1 - below[l] * (1 - (ones[l] / lv.bits) ^ lv.k)
    st.skipped = st.skipped + p / (1 - p)
    for j = at, at + lv.k - 1 do
      if old[j] == 0 then ones[l] = ones[l] + 1 end
    end
    at = at + lv.k
    changed[l] = true
  end
  for l in pairs(changed) do redis.call('SETRANGE', st.key, bloomLevel(st, l).ones, struct.pack('>I4', ones[l])) end
  redis.call('SETRANGE', st.key, 0, string.format('%016d', st.count))
end
`;
