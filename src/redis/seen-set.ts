// A host's URL-seen set, exact and compact (issue 40, part 2): each URL is
// the first 64 bits of its fingerprint (8 binary bytes), appended to one of
// the host's buckets, the fields of one HASH (the host's `seen` key). A
// bucket is picked by the fingerprint's first 24 bits under linear hashing:
// the host starts with one bucket and splits one more each time the URLs
// pass SEEN_BUCKET_FILL a bucket on average, so buckets stay around 0.5–1 KB
// whatever the host's size and the per-element overhead of a Redis set
// (about 60 bytes a member) is paid once a bucket, not once a URL. A host of
// a few URLs keeps a single short bucket, which Redis stores as a listpack.
// Field `#` holds `<level> <split> <count>`: the linear hashing's state and
// the URLs held.
//
// Layouts: only campaigns marked with layout 2 when they were created
// (src/redis/frontier-layout.ts) have these hashes. A campaign created
// before keeps a SET of 16-character fingerprints per host for its whole
// life (the scripts' SMISMEMBER and SADD path, as older releases wrote it),
// whatever release its workers run: the two forms never meet in one
// campaign, and the scripts are told which one by their caller, not by
// what they find (a host's first URL finds no key at all). A campaign created
// with `frontier.seen: bloom` keeps a Bloom filter in the same key instead
// (src/redis/seen-bloom.ts), behind the same functions.
//
// Collisions: two URLs of one host whose fingerprints share their first 64
// bits count as one, and the later is not fetched. For n URLs of a host the
// chance of any such pair is about n² / 2^65: 3e-8 for a million, 3e-6 for
// ten million (docs/operations.md, "Redis memory").
import { Buffer } from 'node:buffer';
import { BLOOM_LUA } from './seen-bloom';

/** Average URLs a bucket holds before the host's next bucket splits off (8 bytes each: ~770 bytes). */
export const SEEN_BUCKET_FILL = 96;

/** The 64-bit fingerprint the seen set keeps of a URL fingerprint (src/url/fingerprint.ts): its first 8 bytes. */
export function seenFingerprint64(fp: string): Buffer {
  const full = Buffer.alloc(9);
  full.write(fp.slice(0, 12).padEnd(12, 'A'), 'base64url');
  return full.subarray(0, 8);
}

/**
 * What the scripts get for a URL fingerprint: in layout 2 its 8 bytes, decoded
 * here rather than in Lua, where it cost about a microsecond of Redis's one
 * thread a link; in layout 1 the fingerprint itself, the SET's member.
 */
export function seenArg(fp: string, layout: 1 | 2): string | Buffer {
  return layout === 2 ? seenFingerprint64(fp) : fp;
}

/**
 * What the scripts are told of a campaign's seen set (its `mode` argument): '1' a SET a host
 * (layout 1), '2' the buckets above (layout 2, exact), `b<rate>` a Bloom filter at that
 * false-positive rate (src/redis/seen-bloom.ts; frontier members and fingerprints as layout 2's).
 */
export type SeenMode = '1' | '2' | `b${number}`;

/**
 * Lua: the seen set's functions, for the scripts that test or mark URLs
 * (src/redis/scripts.ts). `seenOpen(key, mode)` once a script (`mode`: SeenMode's
 * '2', the buckets above; a `b<rate>`, a Bloom filter; else the SET), `seenHasAll(st, fps)`
 * and `seenAddAll(st, fps)` with the fingerprints as seenArg gives them,
 * `seenClose(st)` before the script returns (writes the buckets, splits).
 */
export const SEEN_LUA = `
${BLOOM_LUA}
local SEEN_FILL = ${SEEN_BUCKET_FILL}
local byte, find = string.byte, string.find
-- The bucket of a 24-bit hash, a number (fields are its decimal form).
local function seenBucket(st, h)
  local b = h % st.width
  if b < st.split then b = h % (st.width * 2) end
  return b
end
local function seenOpen(key, mode)
  mode = mode or '1'
  local compact = mode == '2'
  local st = {key = key, set = not compact, level = 0, split = 0, count = 0, cache = {}, adds = {}}
  if string.sub(mode, 1, 1) == 'b' then
    st.set = false
    bloomOpen(st, key, tonumber(string.sub(mode, 2)))
    return st
  end
  if compact then
    local m = redis.call('HGET', key, '#')
    if m then
      local l, s, n = string.match(m, '^(%d+) (%d+) (%d+)$')
      st.level, st.split, st.count = tonumber(l), tonumber(s), tonumber(n)
    end
  end
  st.width = 2 ^ st.level
  return st
end
-- Whether the 8 bytes are one of the bucket's (a match must start on an 8-byte boundary).
local function seenIn(v, bin)
  local i = 1
  while true do
    local p = find(v, bin, i, true)
    if not p then return false end
    if (p - 1) % 8 == 0 then return true end
    i = p + 1
  end
end
-- For each fingerprint, whether the host has seen it: one SMISMEMBER for a
-- campaign of layout 1 (its SET); else one HMGET for the buckets the batch
-- needs, each fingerprint searched in its bucket's string.
local function seenHasAll(st, fps)
  local out = {}
  if #fps == 0 then return out end
  if st.bloom then return bloomHasAll(st, fps) end
  if st.set then
    local r = redis.call('SMISMEMBER', st.key, unpack(fps))
    for i = 1, #fps do out[i] = r[i] == 1 end
    return out
  end
  local cache, at, want = st.cache, {}, {}
  local width, split = st.width, st.split
  for i = 1, #fps do
    local b1, b2, b3 = byte(fps[i], 1, 3)
    local h = b1 * 65536 + b2 * 256 + b3
    local b = h % width
    if b < split then b = h % (width * 2) end
    at[i] = b
    if cache[b] == nil then
      cache[b] = false
      want[#want + 1] = b
    end
  end
  if #want > 0 then
    local names = {}
    for j = 1, #want do names[j] = tostring(want[j]) end
    local got = redis.call('HMGET', st.key, unpack(names))
    for j = 1, #want do cache[want[j]] = got[j] or '' end
  end
  for i = 1, #fps do out[i] = seenIn(cache[at[i]], fps[i]) end
  return out
end
-- Adds fingerprints seenHasAll found absent, each once.
local function seenAddAll(st, fps)
  if #fps == 0 then return end
  if st.bloom then return bloomAddAll(st, fps) end
  if st.set then
    redis.call('SADD', st.key, unpack(fps))
    return
  end
  for i = 1, #fps do
    local b1, b2, b3 = byte(fps[i], 1, 3)
    local b = seenBucket(st, b1 * 65536 + b2 * 256 + b3)
    local list = st.adds[b]
    if not list then
      list = {}
      st.adds[b] = list
    end
    list[#list + 1] = fps[i]
  end
  st.count = st.count + #fps
end
-- Writes what seenAddAll added and the buckets splits changed (one HSET),
-- splitting while the host is past SEEN_FILL a bucket on average. Linear
-- hashing: bucket \`split\` splits into itself and split + width by one more
-- bit of the hash (24 bits: at most 16M buckets, ~1.6 billion URLs a host).
local function seenClose(st)
  if st.bloom then return bloomClose(st) end
  if st.set or next(st.adds) == nil then return end
  local changed = {}
  for b, list in pairs(st.adds) do
    st.cache[b] = st.cache[b] .. table.concat(list)
    changed[b] = true
  end
  while st.level < 24 and st.count > SEEN_FILL * (st.width + st.split) do
    local lo, hi, wide = st.split, st.split + st.width, st.width * 2
    local v = st.cache[lo]
    if v == nil then v = redis.call('HGET', st.key, tostring(lo)) or '' end
    local keep, move = {}, {}
    for i = 1, #v, 8 do
      local b1, b2, b3 = byte(v, i, i + 2)
      if (b1 * 65536 + b2 * 256 + b3) % wide == lo then keep[#keep + 1] = string.sub(v, i, i + 7) else move[#move + 1] = string.sub(v, i, i + 7) end
    end
    st.cache[lo] = table.concat(keep)
    st.cache[hi] = table.concat(move)
    changed[lo] = true
    changed[hi] = true
    st.split = st.split + 1
    if st.split == st.width then
      st.level = st.level + 1
      st.width = wide
      st.split = 0
    end
  end
  local args, gone = {}, {}
  for b in pairs(changed) do
    if st.cache[b] == '' then
      gone[#gone + 1] = tostring(b)
    else
      args[#args + 1] = tostring(b)
      args[#args + 1] = st.cache[b]
    end
  end
  args[#args + 1] = '#'
  args[#args + 1] = string.format('%d %d %d', st.level, st.split, st.count)
  redis.call('HSET', st.key, unpack(args))
  if #gone > 0 then redis.call('HDEL', st.key, unpack(gone)) end
end
`;
