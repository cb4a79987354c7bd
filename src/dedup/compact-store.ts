// The content index's compact layout (format 2, src/dedup/content-format.ts):
// Lua pieces the content and payload scripts share, and the names of the keys
// they create. Everything is under the campaign's hash tag, in one slot.
//
// Why this shape: a Redis hash of many fields is a hash table, some 60-70
// bytes of overhead a field before its name and value; a small hash (a
// listpack, up to hash-max-listpack-entries fields of at most
// hash-max-listpack-value bytes) costs 2-3 bytes a field. So each map is cut
// into small hashes by linear hashing: bucket keys `<map>:<n>`, one more
// split off whenever the map averages more than MAP_LOAD fields a bucket, so
// buckets stay small whatever the campaign's size and a lookup stays one HGET
// in one small hash. Fields are 8 binary bytes (a 64-bit prefix of a hash),
// values short. SimHash band buckets hold fixed 12-byte records in strings,
// split the same way. A page's URL is kept once, in numbered slots of strings
// (`u:<n>`, PAGE_SLOTS a string), and everything else names the page by its
// number: a duplicate's verdict, an exact hash's owner, a band record, a
// stored payload. Format 3 (content-format.ts) goes further where the crawl's
// peak was (issue 40): URLs' origins numbered once, each page's SimHash once,
// and band records of 5 bytes (the page's number and a byte of its band value).
import type { RedisLike } from '../redis/scripts';
import { contentKeys } from '../redis/keys';

/**
 * Fields a map's bucket holds on average before one more bucket is split off. A bucket's turn to
 * split comes when it holds about twice this: 80 stays under 128, Redis's default listpack bound
 * (at 64, about 5 % of buckets went past it into the large encoding, which they never leave).
 */
export const MAP_LOAD = 40;
/** Band records a band bucket holds on average before a split: what a check compares at most per band, as the old per-value cap of 64. */
export const BAND_LOAD = 64;
/** Band records a format-3 band bucket holds on average before a split: records are 5 bytes, and a key costs about as much as 16 of them. */
export const BAND_LOAD3 = 128;
/** Page URLs a `u:<n>` string holds (and origins an `h:<n>` string). */
export const PAGE_SLOTS = 128;
/**
 * SimHashes an `s:<n>` string holds (format 3): 255 of 8 bytes and the string's header fill an
 * allocation of 2048 bytes exactly, where 128 (1030 bytes) would take one of 1280.
 */
export const SIM_SLOTS = 255;

/**
 * Lua, given `meta` (the meta hash's name) and `pre` (the content keys'
 * prefix, `crawl:{campaign}:content:`): the linear-hashing maps and the page
 * table. `M` caches the meta hash, read once a script.
 */
export const COMPACT_LUA = `
local M = {}
do
  local flat = redis.call('HGETALL', meta)
  for i = 1, #flat, 2 do M[flat[i]] = flat[i + 1] end
end
local MAP_LOAD, BAND_LOAD, BAND_LOAD3, PAGE_SLOTS, SIM_SLOTS = ${MAP_LOAD}, ${BAND_LOAD}, ${BAND_LOAD3}, ${PAGE_SLOTS}, ${SIM_SLOTS}
local function fmt(n) return string.format('%d', n) end
-- The campaign's retention puts a time to live on every key the meta hash names; a key this
-- script creates afterwards (a new bucket, a split's target, a new page string) gets the
-- same, or nothing would ever name it again once the meta hash is gone.
local LIFE = redis.call('PTTL', meta)
local function live(k)
  if LIFE > 0 and redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, LIFE) end
end
-- The first 4 bytes of a binary field, big-endian: what picks its bucket.
local function h32(s)
  local a, b, c, d = string.byte(s, 1, 4)
  return ((a * 256 + b) * 256 + c) * 256 + d
end
-- Linear hashing: buckets 0 .. 2^l + s - 1; a hash below s in the low l bits has been split by l + 1.
local function state(map) return tonumber(M[map .. ':l'] or '0'), tonumber(M[map .. ':s'] or '0') end
local function slot(h, l, s)
  local b = h % 2 ^ l
  if b < s then b = h % 2 ^ (l + 1) end
  return b
end
local function bucketOf(map, h)
  local l, s = state(map)
  return pre .. map .. ':' .. fmt(slot(h, l, s))
end
-- One more entry in the map; past the load the next bucket in turn is split
-- by rehash(entries of the bucket) → the entries that move, moved by move(from, to, l, s).
local function grown(map, load, move)
  local n = redis.call('HINCRBY', meta, map .. ':n', 1)
  local l, s = state(map)
  if n <= load * (2 ^ l + s) then return end
  move(pre .. map .. ':' .. fmt(s), pre .. map .. ':' .. fmt(s + 2 ^ l), l, s)
  s = s + 1
  if s >= 2 ^ l then l, s = l + 1, 0 end
  M[map .. ':l'], M[map .. ':s'] = fmt(l), fmt(s)
  redis.call('HSET', meta, map .. ':l', fmt(l), map .. ':s', fmt(s))
end
local function shrunk(map) redis.call('HINCRBY', meta, map .. ':n', -1) end

-- Hash maps: binary field (8 bytes) -> short value.
local function mapGet(map, field) return redis.call('HGET', bucketOf(map, h32(field)), field) end
local function mapPut(map, field, value)
  local bucket = bucketOf(map, h32(field))
  if redis.call('HSET', bucket, field, value) == 0 then return end
  live(bucket)
  grown(map, MAP_LOAD, function(from, to, l, s)
    local all = redis.call('HGETALL', from)
    local moved, gone = {}, {}
    for i = 1, #all, 2 do
      if h32(all[i]) % 2 ^ (l + 1) ~= s then
        moved[#moved + 1] = all[i]
        moved[#moved + 1] = all[i + 1]
        gone[#gone + 1] = all[i]
      end
    end
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      live(to)
      redis.call('HDEL', from, unpack(gone))
    end
  end)
end
local function mapDel(map, field)
  if redis.call('HDEL', bucketOf(map, h32(field)), field) == 1 then shrunk(map) end
end

-- Pages: number -> URL, PAGE_SLOTS a string, one URL a line, in number order
-- (a page is numbered and its line appended in the same script). A line
-- starting with byte 1 or 2 stands for http:// or https:// (no URL starts
-- with a control character): six or seven bytes fewer a page. Format 3 keeps
-- origins (scheme://authority) the same way, numbered in their own table
-- (\`h:<n>\`, found by the map \`o\`: 64 bits of the origin's SHA-1 → number),
-- and a page's line is byte 3, the origin's number in base 128 in bytes of
-- 128 and more (so no separator: the rest of the URL starts with '/', '?' or
-- '#', or is empty), and the rest of the URL: a crawl has a few origins and many pages of each, and an origin is
-- most of a short URL. Format 3 also keeps every page's SimHash, 8 bytes at
-- its number's place in \`s:<n>\` (zeros for a page without one), so band
-- records need only the page's number.
local FMT = tonumber(M.v or '1')
local function lineKey(tbl, id) return pre .. tbl .. ':' .. fmt(math.floor((id - 1) / PAGE_SLOTS)) end
local function addLine(tbl, counter, line)
  local id = redis.call('HINCRBY', meta, counter, 1)
  local k = lineKey(tbl, id)
  -- SET, not APPEND: an appended string keeps room to grow, up to as much again.
  redis.call('SET', k, (redis.call('GET', k) or '') .. line .. '\\n', 'KEEPTTL')
  live(k)
  return id
end
local function readLine(tbl, id)
  local s = redis.call('GET', lineKey(tbl, id))
  if not s then return nil end
  local at = 1
  for _ = 1, (id - 1) % PAGE_SLOTS do
    local nl = string.find(s, '\\n', at, true)
    if not nl then return nil end
    at = nl + 1
  end
  local nl = string.find(s, '\\n', at, true)
  return string.sub(s, at, (nl or (#s + 1)) - 1)
end
local function simKey(id) return pre .. 's:' .. fmt(math.floor((id - 1) / SIM_SLOTS)) end
-- The page's SimHash as two 32-bit halves, or nil when it has no slot.
local function simOf(id)
  local at = ((id - 1) % SIM_SLOTS) * 8
  local r = redis.call('GETRANGE', simKey(id), at, at + 7)
  if #r < 8 then return nil end
  return struct.unpack('>I4I4', r)
end
-- Format 3: a URL's origin by number, made when new. nil (the URL is then kept
-- whole) for a URL with no origin, or in the rare case its 64 bits are another
-- origin's: the line read back is compared, so a collision never renames a URL.
local function originId(origin)
  local hx = redis.sha1hex(origin)
  local field = struct.pack('>I4I4', tonumber(string.sub(hx, 1, 8), 16), tonumber(string.sub(hx, 9, 16), 16))
  local known = mapGet('o', field)
  if known then
    local id = tonumber(known)
    if readLine('h', id) == origin then return id end
    return nil
  end
  local id = addLine('h', 'origins', origin)
  mapPut('o', field, fmt(id))
  return id
end
local function newPage(url, sim)
  local line = url
  if FMT >= 3 then
    local origin, rest = string.match(url, '^(%a[%w+.-]*://[^/?#]*)(.*)$')
    local oid = origin and originId(origin)
    if oid then
      local digits = ''
      repeat
        digits = string.char(128 + oid % 128) .. digits
        oid = math.floor(oid / 128)
      until oid == 0
      line = '\\3' .. digits .. rest
    end
  end
  if line == url then
    if string.sub(url, 1, 7) == 'http://' then
      line = '\\1' .. string.sub(url, 8)
    elseif string.sub(url, 1, 8) == 'https://' then
      line = '\\2' .. string.sub(url, 9)
    end
  end
  local id = addLine('u', 'pages', line)
  if FMT >= 3 then
    -- A SimHash string is made whole (zeros) by its first page, pages being numbered in order, and
    -- written in place after: SETRANGE within its length neither grows it nor sends more than 8
    -- bytes to the AOF and replicas, where rewriting it whole would send 2 KB a page.
    local k = simKey(id)
    local at = ((id - 1) % SIM_SLOTS) * 8
    if at == 0 then
      redis.call('SET', k, string.rep('\\0', SIM_SLOTS * 8), 'NX')
      live(k)
    end
    if sim then redis.call('SETRANGE', k, at, sim) end
  end
  return id
end
local function fullUrl(line)
  local first = string.byte(line, 1)
  if first == 1 then return 'http://' .. string.sub(line, 2) end
  if first == 2 then return 'https://' .. string.sub(line, 2) end
  if first == 3 then
    local oid, at = 0, 2
    while at <= #line do
      local c = string.byte(line, at)
      if c < 128 then break end
      oid, at = oid * 128 + c - 128, at + 1
    end
    return (readLine('h', oid) or '') .. string.sub(line, at)
  end
  return line
end
local function pageUrl(id)
  local line = readLine('u', id)
  if not line then return '' end
  return fullUrl(line)
end
`;

/** What every key of the compact layout starts with, `crawl:{campaign}:content:` (the scripts' `pre`). */
export const compactPrefix = (campaignKey: string): string => contentKeys(campaignKey, 0).bucket('', 0).slice(0, -':0'.length);

/** Names of every key the compact layout created for the campaign, read from its meta hash: what a retention must reach. */
export async function compactKeyNames(redis: RedisLike, campaignKey: string): Promise<string[]> {
  const k = contentKeys(campaignKey, 0);
  const meta = await redis.hgetall(k.meta);
  const names: string[] = [];
  for (const [field, value] of Object.entries(meta)) {
    if (field.endsWith(':l')) {
      const map = field.slice(0, -2);
      const buckets = 2 ** Number(value) + Number(meta[`${map}:s`] ?? '0');
      for (let b = 0; b < buckets; b++) names.push(k.bucket(map, b));
    }
  }
  // A map that never split has bucket 0 only, and no ':l' field yet.
  for (const field of Object.keys(meta)) {
    if (field.endsWith(':n') && meta[`${field.slice(0, -2)}:l`] === undefined) names.push(k.bucket(field.slice(0, -2), 0));
  }
  const pages = Number(meta.pages ?? '0');
  for (let b = 0; b * PAGE_SLOTS < pages; b++) names.push(k.bucket('u', b));
  // Format 3: every page has its SimHash slot, and the origins their own table.
  if (meta.v === '3') for (let b = 0; b * SIM_SLOTS < pages; b++) names.push(k.bucket('s', b));
  const origins = Number(meta.origins ?? '0');
  for (let b = 0; b * PAGE_SLOTS < origins; b++) names.push(k.bucket('h', b));
  return names;
}
