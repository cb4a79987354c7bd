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
// stored payload.
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
/** Page URLs a `u:<n>` string holds. */
export const PAGE_SLOTS = 128;

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
local MAP_LOAD, BAND_LOAD, PAGE_SLOTS = ${MAP_LOAD}, ${BAND_LOAD}, ${PAGE_SLOTS}
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
-- with a control character): six or seven bytes fewer a page.
local function pageKey(id) return pre .. 'u:' .. fmt(math.floor((id - 1) / PAGE_SLOTS)) end
local function newPage(url)
  local id = redis.call('HINCRBY', meta, 'pages', 1)
  local k = pageKey(id)
  local line = url
  if string.sub(url, 1, 7) == 'http://' then
    line = '\\1' .. string.sub(url, 8)
  elseif string.sub(url, 1, 8) == 'https://' then
    line = '\\2' .. string.sub(url, 9)
  end
  -- SET, not APPEND: an appended string keeps room to grow, up to as much again.
  redis.call('SET', k, (redis.call('GET', k) or '') .. line .. '\\n', 'KEEPTTL')
  live(k)
  return id
end
local function fullUrl(line)
  local first = string.byte(line, 1)
  if first == 1 then return 'http://' .. string.sub(line, 2) end
  if first == 2 then return 'https://' .. string.sub(line, 2) end
  return line
end
local function pageUrl(id)
  local s = redis.call('GET', pageKey(id))
  if not s then return '' end
  local at = 1
  for _ = 1, (id - 1) % PAGE_SLOTS do
    local nl = string.find(s, '\\n', at, true)
    if not nl then return '' end
    at = nl + 1
  end
  local nl = string.find(s, '\\n', at, true)
  return fullUrl(string.sub(s, at, (nl or (#s + 1)) - 1))
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
  return names;
}
