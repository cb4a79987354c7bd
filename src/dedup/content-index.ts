// Content deduplication shared by every worker of a campaign: an exact index
// (content hash -> first URL) and a near-duplicate index over 64-bit SimHashes,
// both consulted and updated by one Lua script so concurrent workers agree on
// which page came first.
import type { Cluster, Redis, Result } from 'ioredis';
import { hash } from 'node:crypto';
import { contentKeys } from '../redis/keys';
import { COMPACT_LUA, compactPrefix } from './compact-store';
import { contentFormat } from './content-format';
import { simhashToHex } from './simhash';

export type ContentVerdict = { kind: 'unique' } | { kind: 'exact-duplicate'; of: string } | { kind: 'near-duplicate'; of: string; distance: number };

export interface ContentCheckInput {
  /** Normalised URL; it may not contain a newline (the index's record separator). */
  url: string;
  /** Hash of the content (e.g. sha256 hex of the visible text). */
  exactHash: string;
  /** SimHash of the visible text, or null when the text is too short to mean anything. */
  simhash: bigint | null;
}

export interface ContentIndexOptions {
  /** Largest Hamming distance that still counts as a near-duplicate (0..15). Default 3. */
  maxDistance?: number;
  /** Entries kept per band bucket; the oldest go first. Default 64. */
  bucketCap?: number;
}

const MAX_BANDS = 16; // bands narrower than 4 bits put most pages in the same few buckets

export { contentKeys } from '../redis/keys';

/**
 * The bits set in a 32-bit value (a SimHash half's XOR with another's): one
 * definition for every format's content check. Needs the script's `band` and
 * `rshift` (LuaJIT-style bit ops) in scope.
 */
const POPCOUNT_LUA = `local function pop(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  return band(x + rshift(x, 16), 0x3F)
end`;

// TODO(move to scripts.ts).
// KEYS: verdict, exact, band_1..band_n. ARGV: url, exactHash, simhash hex or '', maxDistance, bucketCap, field_1..field_n.
// Returns the verdict string: 'u' | 'e\t<of>' | 'n\t<distance>\t<of>'.
// Pigeonhole: with maxDistance+1 disjoint bands, two hashes within maxDistance
// agree exactly on at least one band, so scanning the buckets of our own band
// values finds every such earlier page still in its bucket. Lua numbers are
// doubles and Redis's Lua has no 64-bit integers, so distances are computed
// on the hex text's two 32-bit halves with the bit library (XOR, then a
// popcount in a few shifts and masks). A popcount table built in Lua cost
// more than the rest of the check together: a script cannot keep it between
// runs, so every check built its 256 entries again.
const CONTENT_CHECK_LUA = `
local url, exactHash, sim = ARGV[1], ARGV[2], ARGV[3]
local known = redis.call('HGET', KEYS[1], url)
if known then return known end

local verdict
local owner = redis.call('HGET', KEYS[2], exactHash)
if owner and owner ~= url then verdict = 'e\\t' .. owner end

local n = #KEYS - 2
local packed = {}
if not verdict and sim ~= '' then
  -- Hamming distance as two 32-bit halves: XOR, then a SWAR popcount. The
  -- bit library's results are 32-bit signed; every step goes through it,
  -- which reduces modulo 2^32, so the sign never shows.
  local band, bxor, rshift = bit.band, bit.bxor, bit.rshift
  ${POPCOUNT_LUA}
  local hi, lo = tonumber(string.sub(sim, 1, 8), 16), tonumber(string.sub(sim, 9, 16), 16)

  local bestD, bestUrl = tonumber(ARGV[4]) + 1, nil
  for i = 1, n do
    local p = redis.call('HGET', KEYS[2 + i], ARGV[5 + i])
    packed[i] = p
    if p then
      for rec in string.gmatch(p, '[^\\n]+') do
        local d = pop(bxor(hi, tonumber(string.sub(rec, 1, 8), 16)))
        -- The first half alone already too far: the second cannot bring it back.
        if d < bestD then
          d = d + pop(bxor(lo, tonumber(string.sub(rec, 9, 16), 16)))
          local of = string.sub(rec, 17)
          if d < bestD and of ~= url then bestD, bestUrl = d, of end
        end
      end
    end
  end
  if bestUrl then verdict = 'n\\t' .. bestD .. '\\t' .. bestUrl end
end

-- Every body that is not itself an exact copy claims its hash, near-duplicates
-- included, so a later byte-identical page is called an exact copy of it.
if not owner then redis.call('HSETNX', KEYS[2], exactHash, url) end
if not verdict then
  verdict = 'u'
  if sim ~= '' then
    local cap, rec = tonumber(ARGV[5]), sim .. url
    for i = 1, n do
      local p = packed[i]
      if p then
        local count = select(2, string.gsub(p, '\\n', '')) + 1
        while p and count >= cap do
          local nl = string.find(p, '\\n', 1, true)
          p = nl and string.sub(p, nl + 1) or nil
          count = count - 1
        end
      end
      redis.call('HSET', KEYS[2 + i], ARGV[5 + i], p and (p .. '\\n' .. rec) or rec)
    end
  end
end
redis.call('HSET', KEYS[1], url, verdict)
return verdict`;

// Formats 2 and 3 (one page table, compact maps): a verdict kept for the
// page (`v`) is rendered and returned at once, before anything is written.
const VERDICT_LUA = `local function render(v)
  local kind = string.sub(v, 1, 1)
  if kind ~= 'e' and kind ~= 'n' then return 'u' end
  if kind == 'e' then return 'e\\t' .. pageUrl(tonumber(string.sub(v, 2))) end
  local d, of = string.match(v, '^n(%d+):(%d+)')
  return 'n\\t' .. d .. '\\t' .. pageUrl(tonumber(of))
end

local known = mapGet('v', key)
if known then return render(known) end`;

// Formats 2 and 3: the band value of a SimHash, the same in both (ARGV alike).
const BAND_HASH_LUA = `-- Band i's value, from its mask halves and their lowest bits' weights (ARGV
-- 9.. in fours): the band's bits shifted down, the two halves' parts added
-- when the band straddles them. What picks the band's bucket: any function
-- of the band value would do, and the value's own low bits are uniform.
local function bandHash(h, l, i)
  local at = 5 + 4 * i
  return (band(h, tonumber(ARGV[at])) % 4294967296) / tonumber(ARGV[at + 2]) + (band(l, tonumber(ARGV[at + 1])) % 4294967296) / tonumber(ARGV[at + 3])
end`;

// The compact layout (format 2, src/dedup/compact-store.ts). KEYS: meta.
// ARGV: prefix, url, URL key (8 bytes), exact key (8 bytes), SimHash (8
// bytes, big-endian) or '', maxDistance, bucketCap, band map prefix
// (\`k<d>b\`), then for each band its mask as two 32-bit halves and each
// half's lowest mask bit's weight (bandMasks). Returns the verdict
// as CONTENT_CHECK_LUA does, the original's URL read from the page table.
//
// A verdict is kept by URL key as '<own page>' (unique: a number, which a
// small hash stores in a few bytes), 'e<original>' or
// 'n<distance>:<original>:<own page>'. Every body that is not an exact copy
// gets a page number (its URL, once, in the page table) and claims its exact
// key with it; a unique page also puts a band record (SimHash, page number)
// in each band's bucket. Band buckets are strings of 12-byte records of all
// band values that hash to the bucket: a record belongs to our band value
// when its SimHash agrees with ours under the band's mask, so nothing but
// the SimHash is stored to tell them apart. At most bucketCap records of one
// band value are kept, the oldest dropped first, as before.
const CONTENT_CHECK2_LUA = `
local meta, pre = KEYS[1], ARGV[1]
${COMPACT_LUA}
local url, key, exact, sim = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift

${VERDICT_LUA}

local stored
local owner = mapGet('x', exact)
if owner then stored = 'e' .. owner end

${BAND_HASH_LUA}

local bands = {}
local hi, lo
-- An exact copy puts nothing in the bands: they are not read for it.
if sim ~= '' and not stored then
  hi, lo = struct.unpack('>I4I4', sim)
  ${POPCOUNT_LUA}
  local cap = tonumber(ARGV[7])
  local bestD, bestId = tonumber(ARGV[6]) + 1, nil
  for i = 1, (#ARGV - 8) / 4 do
    local mhi, mlo = tonumber(ARGV[5 + 4 * i]), tonumber(ARGV[6 + 4 * i])
    local x = bandHash(hi, lo, i)
    local map = ARGV[8] .. (i - 1)
    local bkey = bucketOf(map, x)
    local p = redis.call('GET', bkey) or ''
    local mine, first = 0, nil
    for at = 1, #p - 11, 12 do
      local rhi, rlo, rid = struct.unpack('>I4I4I4', p, at)
      if band(bxor(rhi, hi), mhi) == 0 and band(bxor(rlo, lo), mlo) == 0 then
        mine = mine + 1
        first = first or at
        -- The first half alone already too far: the second cannot bring it back.
        local d = pop(bxor(hi, rhi))
        if d < bestD then
          d = d + pop(bxor(lo, rlo))
          if d < bestD then bestD, bestId = d, rid end
        end
      end
    end
    bands[i] = {map = map, key = bkey, p = p, mine = mine, first = first, cap = cap}
  end
  if bestId then stored = 'n' .. bestD .. ':' .. fmt(bestId) end
end

local own
if not owner then
  own = newPage(url)
  mapPut('x', exact, fmt(own))
end
if stored and string.sub(stored, 1, 1) == 'n' then stored = stored .. ':' .. fmt(own) end
if not stored then
  stored = fmt(own)
  local rec = sim ~= '' and (sim .. struct.pack('>I4', own)) or nil
  for i = 1, #bands do
    local b = bands[i]
    local p = b.p
    if b.mine >= b.cap then
      -- The oldest record of our band value goes: the map keeps its count.
      p = string.sub(p, 1, b.first - 1) .. string.sub(p, b.first + 12)
      redis.call('SET', b.key, p .. rec, 'KEEPTTL')
    else
      -- SET, not APPEND: an appended string keeps room to grow, up to as much again.
      redis.call('SET', b.key, p .. rec, 'KEEPTTL')
      live(b.key)
      grown(b.map, BAND_LOAD, function(from, to, l, s)
        local all = redis.call('GET', from) or ''
        local stay, go = {}, {}
        for at = 1, #all - 11, 12 do
          local rhi, rlo = struct.unpack('>I4I4', all, at)
          local x = bandHash(rhi, rlo, i)
          local r = string.sub(all, at, at + 11)
          if x % 2 ^ (l + 1) == s then stay[#stay + 1] = r else go[#go + 1] = r end
        end
        if #go > 0 then
          redis.call('SET', from, table.concat(stay), 'KEEPTTL')
          redis.call('SET', to, (redis.call('GET', to) or '') .. table.concat(go), 'KEEPTTL')
          live(to)
        end
      end)
    end
  end
end
mapPut('v', key, stored)
return render(stored)`;

// Format 3 (src/dedup/content-format.ts): as CONTENT_CHECK2_LUA, same ARGV
// and verdicts, but a band record is 5 bytes, the page's number and a tag
// byte of its band value (tagOf), and the page's SimHash is read from the
// SimHash table (`s:<n>`, written by newPage) for the records whose tag is
// ours: 20 bytes a unique page in four bands and 8 for its SimHash, where
// format 2 keeps 48. Exact as before: a record counts as our band value's
// only when its SimHash agrees with ours under the band's mask.
const CONTENT_CHECK3_LUA = `
local meta, pre = KEYS[1], ARGV[1]
${COMPACT_LUA}
local url, key, exact, sim = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift

${VERDICT_LUA}

local stored
local owner = mapGet('x', exact)
-- An owner whose stored payload is kept with it (payload-index.ts, format 3): its page number is in the record.
if owner and not tonumber(owner) then owner = fmt((struct.unpack('>I4', owner, 2))) end
if owner then stored = 'e' .. owner end

${BAND_HASH_LUA}

-- A byte of the band value (through bandHash: any function of it would do):
-- what tells a record of our band value from the bucket's others without
-- reading its page's SimHash. Its bytes added, so values that share the low
-- bits that picked the bucket still differ in it.
local function tagOf(x)
  local t, y = 0, x
  for _ = 1, 8 do
    t = (t + y % 256) % 256
    y = math.floor(y / 256)
  end
  return t
end

local bands = {}
local hi, lo
-- An exact copy puts nothing in the bands: they are not read for it.
if sim ~= '' and not stored then
  hi, lo = struct.unpack('>I4I4', sim)
  ${POPCOUNT_LUA}
  local cap = tonumber(ARGV[7])
  local bestD, bestId = tonumber(ARGV[6]) + 1, nil
  for i = 1, (#ARGV - 8) / 4 do
    local mhi, mlo = tonumber(ARGV[5 + 4 * i]), tonumber(ARGV[6 + 4 * i])
    local x = bandHash(hi, lo, i)
    local map = ARGV[8] .. (i - 1)
    local bkey = bucketOf(map, x)
    local p = redis.call('GET', bkey) or ''
    local mine, first = 0, nil
    local tag = tagOf(x)
    for at = 1, #p - 4, 5 do
      -- Another tag is another band value; the same tag, most likely ours, which the SimHash says.
      local rhi, rlo, rid
      if string.byte(p, at + 4) == tag then
        rid = struct.unpack('>I4', p, at)
        rhi, rlo = simOf(rid)
      end
      if rhi and band(bxor(rhi, hi), mhi) == 0 and band(bxor(rlo, lo), mlo) == 0 then
        mine = mine + 1
        first = first or at
        -- The first half alone already too far: the second cannot bring it back.
        local d = pop(bxor(hi, rhi))
        if d < bestD then
          d = d + pop(bxor(lo, rlo))
          if d < bestD then bestD, bestId = d, rid end
        end
      end
    end
    bands[i] = {map = map, key = bkey, p = p, mine = mine, first = first, cap = cap, tag = tag}
  end
  if bestId then stored = 'n' .. bestD .. ':' .. fmt(bestId) end
end

local own
if not owner then
  own = newPage(url, sim ~= '' and sim or nil)
  mapPut('x', exact, fmt(own))
end
if stored and string.sub(stored, 1, 1) == 'n' then stored = stored .. ':' .. fmt(own) end
if not stored then
  stored = fmt(own)
  for i = 1, #bands do
    local b = bands[i]
    local p = b.p
    local rec = struct.pack('>I4B', own, b.tag)
    if b.mine >= b.cap then
      -- The oldest record of our band value goes: the map keeps its count.
      p = string.sub(p, 1, b.first - 1) .. string.sub(p, b.first + 5)
      redis.call('SET', b.key, p .. rec, 'KEEPTTL')
    else
      -- SET, not APPEND: an appended string keeps room to grow, up to as much again.
      redis.call('SET', b.key, p .. rec, 'KEEPTTL')
      live(b.key)
      -- A record's bucket is its band value's: its page's SimHash says which.
      grown(b.map, BAND_LOAD3, function(from, to, l, s)
        local all = redis.call('GET', from) or ''
        local stay, go = {}, {}
        for at = 1, #all - 4, 5 do
          local rhi, rlo = simOf((struct.unpack('>I4', all, at)))
          local x = bandHash(rhi, rlo, i)
          local r = string.sub(all, at, at + 4)
          if x % 2 ^ (l + 1) == s then stay[#stay + 1] = r else go[#go + 1] = r end
        end
        if #go > 0 then
          redis.call('SET', from, table.concat(stay), 'KEEPTTL')
          redis.call('SET', to, (redis.call('GET', to) or '') .. table.concat(go), 'KEEPTTL')
          live(to)
        end
      end)
    end
  end
end
mapPut('v', key, stored)
return render(stored)`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    // numkeys first: the band count, hence the key count, depends on maxDistance.
    crawlContentCheck(numKeys: number, ...keysThenArgv: (string | number)[]): Result<string, Context>;
    crawlContentCheck2(meta: string, ...argv: (string | number | Buffer)[]): Result<string, Context>;
    crawlContentCheck3(meta: string, ...argv: (string | number | Buffer)[]): Result<string, Context>;
  }
}

function ensureScript(redis: Redis | Cluster): void {
  if (typeof (redis as unknown as Record<string, unknown>).crawlContentCheck !== 'function') {
    redis.defineCommand('crawlContentCheck', { lua: CONTENT_CHECK_LUA });
  }
  if (typeof (redis as unknown as Record<string, unknown>).crawlContentCheck2 !== 'function') {
    redis.defineCommand('crawlContentCheck2', { numberOfKeys: 1, lua: CONTENT_CHECK2_LUA });
  }
  if (typeof (redis as unknown as Record<string, unknown>).crawlContentCheck3 !== 'function') {
    redis.defineCommand('crawlContentCheck3', { numberOfKeys: 1, lua: CONTENT_CHECK3_LUA });
  }
}

/** 64 bits of SHA-256 over a string: a URL's or a digest's key in the compact layout. */
export const key64 = (s: string): Buffer => hash('sha256', s, 'buffer').subarray(0, 8);

/** An exact content hash's key: its first 64 bits when it is `sha256:<hex>` (contentHashOf), else key64 of it. */
export function exactKey(exactHash: string): Buffer {
  const m = /^sha256:([0-9a-f]{16})/.exec(exactHash);
  return m ? Buffer.from(m[1], 'hex') : key64(exactHash);
}

/**
 * Each band's mask as [high 32 bits, low 32 bits, weight of the high half's
 * lowest mask bit, the low half's], bands laid out as bandValues lays them.
 */
export function bandMasks(bands: number): [number, number, number, number][] {
  const base = Math.floor(64 / bands);
  const extra = 64 % bands;
  const out: [number, number, number, number][] = [];
  const lowest = (m: bigint): number => {
    let n = 0;
    while (m !== 0n && ((m >> BigInt(n)) & 1n) === 0n) n++;
    return 2 ** n;
  };
  let shift = 64;
  for (let i = 0; i < bands; i++) {
    const width = base + (i < extra ? 1 : 0);
    shift -= width;
    const m = ((1n << BigInt(width)) - 1n) << BigInt(shift);
    const mhi = m >> 32n;
    const mlo = m & 0xffffffffn;
    out.push([Number(mhi), Number(mlo), lowest(mhi), lowest(mlo)]);
  }
  return out;
}

/**
 * Splits 64 bits into `bands` contiguous bands (the first 64 % bands one bit
 * wider), each as hex, most significant band first.
 */
export function bandValues(simhash: bigint, bands: number): string[] {
  const base = Math.floor(64 / bands);
  const extra = 64 % bands;
  const out: string[] = [];
  let shift = 64;
  for (let i = 0; i < bands; i++) {
    const width = base + (i < extra ? 1 : 0);
    shift -= width;
    const v = (simhash >> BigInt(shift)) & ((1n << BigInt(width)) - 1n);
    out.push(v.toString(16));
  }
  return out;
}

function parseVerdict(v: string): ContentVerdict {
  if (v === 'u') return { kind: 'unique' };
  if (v.startsWith('e\t')) return { kind: 'exact-duplicate', of: v.slice(2) };
  if (v.startsWith('n\t')) {
    const tab = v.indexOf('\t', 2);
    return { kind: 'near-duplicate', of: v.slice(tab + 1), distance: Number(v.slice(2, tab)) };
  }
  throw new Error(`unexpected content verdict ${JSON.stringify(v)}`);
}

/**
 * First writer wins: the first URL to bring some content is 'unique' and is
 * recorded; later URLs with the same hash, or a SimHash within maxDistance of
 * a recorded page, are duplicates of it. A URL's first verdict is final, so a
 * retried activity gets the same answer even if the refetched content differs.
 *
 * Bucket cap: every check scans its band buckets inside the script, which
 * blocks Redis for all workers, and bucket sizes are skewed (template-heavy
 * sites put many pages in the same buckets; wide maxDistance means narrow
 * bands and few distinct values). Capping each bucket bounds both the script's
 * run time (bands x cap records compared) and the memory per bucket. Dropping
 * the oldest costs recall only: a page whose match was evicted from every
 * band it shares may be called unique, but nothing is ever called a duplicate
 * wrongly, and a breadth-first crawl meets a section's look-alike pages close
 * together, so the recent ones are the useful ones.
 */
export class ContentIndex {
  private readonly keys: ReturnType<typeof contentKeys>;
  private readonly maxDistance: number;
  private readonly bucketCap: number;
  private readonly bandKeys: string[];

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly campaignKey: string,
    opts: ContentIndexOptions = {},
  ) {
    this.maxDistance = opts.maxDistance ?? 3;
    this.bucketCap = opts.bucketCap ?? 64;
    if (!Number.isInteger(this.maxDistance) || this.maxDistance < 0 || this.maxDistance >= MAX_BANDS) {
      throw new RangeError(`maxDistance must be an integer from 0 to ${MAX_BANDS - 1}, got ${this.maxDistance}`);
    }
    if (!Number.isInteger(this.bucketCap) || this.bucketCap < 1) throw new RangeError(`bucketCap must be a positive integer, got ${this.bucketCap}`);
    this.keys = contentKeys(campaignKey, this.maxDistance);
    this.bandKeys = Array.from({ length: this.maxDistance + 1 }, (_, i) => this.keys.band(i));
    ensureScript(redis);
  }

  async check(input: ContentCheckInput): Promise<ContentVerdict> {
    if (input.url.includes('\n')) throw new TypeError(`url may not contain a newline: ${JSON.stringify(input.url)}`);
    if (!input.exactHash) throw new TypeError('exactHash is empty');
    const format = await contentFormat(this.redis, this.campaignKey);
    if (format !== 1) return this.check2(input, format);
    const sim = input.simhash === null ? '' : simhashToHex(input.simhash);
    const fields = input.simhash === null ? this.bandKeys.map(() => '') : bandValues(input.simhash, this.bandKeys.length);
    const keys = [this.keys.verdict, this.keys.exact, ...this.bandKeys];
    const raw = await this.redis.crawlContentCheck(keys.length, ...keys, input.url, input.exactHash, sim, this.maxDistance, this.bucketCap, ...fields);
    return parseVerdict(raw);
  }

  /** Formats 2 and 3: the same arguments, each its own script. */
  private async check2(input: ContentCheckInput, format: 2 | 3): Promise<ContentVerdict> {
    const k = this.keys;
    const sim = input.simhash === null ? '' : Buffer.from(simhashToHex(input.simhash), 'hex');
    const masks = input.simhash === null ? [] : bandMasks(this.bandKeys.length).flat();
    const check = format === 3 ? this.redis.crawlContentCheck3.bind(this.redis) : this.redis.crawlContentCheck2.bind(this.redis);
    const raw = await check(
      k.meta,
      compactPrefix(this.campaignKey),
      input.url,
      key64(input.url),
      exactKey(input.exactHash),
      sim,
      this.maxDistance,
      this.bucketCap,
      `k${this.maxDistance}b`,
      ...masks,
    );
    return parseVerdict(raw);
  }
}
