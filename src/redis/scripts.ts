// Lua scripts: each is atomic and touches keys of a single hash slot.
import type { Cluster, Redis, Result } from 'ioredis';
import { COUNTERS, EMBED_COUNTS, PAGE_COUNTS } from '../stats/counters';
import { SEEN_LUA } from './seen-set';
import { BLOOM_SKIPPED_SCALE, SEEN_SKIPPED_FIELD } from './seen-bloom';

export type RedisLike = Redis | Cluster;

// ARGV quadruples: fingerprint (src/redis/seen-set.ts seenArg: its 8 bytes in
// a campaign of layout 2, itself in one of layout 1), score base, member,
// class. A URL enters the
// frontier only if its fingerprint is new to the host's seen-set:
// mark-seen-and-enqueue in one step. The base (priority and depth,
// frontierScoreBase in src/redis/frontier.ts) plus the host's discovery
// counter is the score: integers below 2^53, exact in Lua's doubles and in
// the zset's.
//
// Before the quadruples, two bounds (-1: none) and the campaign's seen mode
// (SeenMode of src/redis/seen-set.ts: '1', '2' or a Bloom filter's `b<rate>`). Pages (class 'p'): a host
// whose page budget is set never queues more pages than it may still fetch,
// budget − (fetched + failed) − pages queued, so a link bomb or a sitemap
// flood grows neither its frontier nor its seen-set past what the budget can
// use. Queued pages are the frontier's size less the sitemaps ever enqueued
// (stats field `sitemaps`): a sitemap already fetched makes the bound that
// much looser, never tighter. Sitemaps and sitemap-index children (class
// 's'): at most the bound per host, counted in the host's stats, so it holds
// across sessions and workers. A URL turned away is not marked seen: found
// again once there is room, it is queued then. Embeds (class 'e', page
// requisites) take no page room: they are bounded per page and per campaign
// where they are found (budgets.maxEmbedsPerPage, budgets.maxEmbeds), and
// counted while queued (stats field \`embedsQueued\`, down again at their
// commit) so queued pages are told from them.
/**
 * How long a clock remembers an owner's newest fencing number: longer than any
 * session and its retries (the frontier keeps its session owner as long).
 */
export const CLOCK_FENCE_TTL_MS = 24 * 60 * 60_000;

/** The Redis clock in whole milliseconds, as \`now\`: what due times (revisits, parked hosts) are kept in. */
/**
 * Marks a batch's new fingerprints seen (src/redis/seen-set.ts) and, under a Bloom filter, adds what
 * it expects to have skipped to the host's stats (src/redis/seen-bloom.ts, in millionths of a URL):
 * an enqueue's links and a seed list's blocks alike.
 */
const SEEN_COMMIT_LUA = `
local function seenCommit(seen, fresh, stats)
  seenAddAll(seen, fresh)
  seenClose(seen)
  if seen.bloom and seen.skipped > 0 then redis.call('HINCRBY', stats, '${SEEN_SKIPPED_FIELD}', math.floor(seen.skipped * ${BLOOM_SKIPPED_SCALE} + 0.5)) end
end`;

const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// Per batch, not per link, whatever its size: the seen-set is asked about
// every fingerprint (src/redis/seen-set.ts: the buckets a batch needs read in
// one HMGET for a campaign of layout 2, one SMISMEMBER for a host's SET in a
// campaign of layout 1, src/redis/frontier-layout.ts; for a Bloom filter's, one
// GET or a few BITFIELDs, src/redis/seen-bloom.ts), and the new ones go
// in with one write (one HSET, one SADD, or a few BITFIELDs), one INCRBY (their discovery numbers are the counter's last k values, in
// ARGV order, as k INCRs would have given them) and one ZADD. A fingerprint
// twice in a batch is queued once, as a second SADD would have found it.
// The stats are read only when a bound applies (a link bomb still costs its
// one SMISMEMBER, never a call per link).
const ENQUEUE_BODY = `
${SEEN_LUA}
${SEEN_COMMIT_LUA}
local added = 0
local pageLimit = tonumber(ARGV[BOUNDS])
local sitemapLimit = tonumber(ARGV[BOUNDS + 1])
local mode = ARGV[BOUNDS + 2]
local fps = {}
for i = BOUNDS + 3, #ARGV, 4 do fps[#fps + 1] = ARGV[i] end
local sitemaps, room, newSitemaps, newEmbeds = 0, 0, 0, 0
if #fps > 0 and (pageLimit >= 0 or sitemapLimit >= 0) then
  local counts = redis.call('HMGET', STATS, 'fetched', 'failed', 'sitemaps', 'embedsQueued')
  sitemaps = tonumber(counts[3] or '0')
  if pageLimit >= 0 then
    local queued = math.max(redis.call('ZCARD', KEYS[2]) + tonumber(redis.call('HGET', STATS, 'spilled') or '0') - sitemaps - tonumber(counts[4] or '0'), 0)
    room = pageLimit - tonumber(counts[1] or '0') - tonumber(counts[2] or '0') - queued
  end
end
local seen = seenOpen(KEYS[1], mode)
local known = seenHasAll(seen, fps)
local fresh, at, taken = {}, {}, {}
for j = 1, #fps do
  local i = BOUNDS + 3 + (j - 1) * 4
  if not known[j] and not taken[fps[j]] then
    local class = ARGV[i + 3]
    local fits
    if class == 's' then fits = sitemapLimit < 0 or sitemaps < sitemapLimit elseif class == 'e' then fits = true else fits = pageLimit < 0 or room > 0 end
    if fits then
      taken[fps[j]] = true
      fresh[#fresh + 1] = fps[j]
      at[#at + 1] = i
      if class == 's' then
        sitemaps = sitemaps + 1
        newSitemaps = newSitemaps + 1
      elseif class == 'e' then
        newEmbeds = newEmbeds + 1
      else
        room = room - 1
      end
    end
  end
end
added = #fresh
if added > 0 then
  seenCommit(seen, fresh, STATS)
  local first = redis.call('INCRBY', KEYS[3], added) - added
  local zargs = {}
  for j = 1, added do
    local i = at[j]
    zargs[2 * j - 1] = string.format('%.0f', tonumber(ARGV[i + 1]) + first + j)
    zargs[2 * j] = ARGV[i + 2]
  end
  redis.call('ZADD', KEYS[2], unpack(zargs))
  if newSitemaps > 0 then redis.call('HINCRBY', STATS, 'sitemaps', newSitemaps) end
  if newEmbeds > 0 then redis.call('HINCRBY', STATS, 'embedsQueued', newEmbeds) end
end
`;

/** ENQUEUE_BODY with its bounds at ARGV[bounds] and ARGV[bounds + 1], the campaign's seen mode at ARGV[bounds + 2] and the host's stats at `stats`. */
const enqueueBody = (bounds: number, stats: string) => ENQUEUE_BODY.replaceAll('BOUNDS', String(bounds)).replaceAll('STATS', stats);

/**
 * A host's frontier size as \`held + spilled\`: the entries in its sorted set (KEYS[2]) and those
 * in its spilled segments (the stats field \`spilled\`, KEYS[5]). Whatever reports a frontier's size
 * counts both, so a host whose entries are all in segments is neither drained nor empty.
 */
const QUEUED = `local held = redis.call('ZCARD', KEYS[2])
local spilled = tonumber(redis.call('HGET', KEYS[5], 'spilled') or '0')`;

/**
 * The fields of a host record that the campaign totals sum (crawlHostRecord):
 * the counters, the frontier, and a Bloom filter campaign's expected skips
 * (`seenSkipped`, millionths of a URL: src/redis/seen-bloom.ts). Records of
 * older releases may lack the embed counters, which the finished-URL count
 * reads as 0, and every record of an exact campaign lacks `seenSkipped`.
 */
const RECORD_SUMS = [...COUNTERS, 'frontier', SEEN_SKIPPED_FIELD] as const;

export const SCRIPTS = {
  // KEYS: seen, frontier, seq, awake, stats. ARGV: page bound, sitemap
  // bound, the campaign's seen mode (SeenMode), then enqueue quadruples. Returns {added, awake, queued, in Redis}
  // (queued: the frontier's entries, those spilled to segments included;
  // in Redis: the sorted set's, which the spill is decided on): when
  // the host's workflow is awake, its next claim sees these URLs and nobody
  // needs to wake it. Reading the flag in the same script as the enqueue is
  // what makes skipping the wake safe (see crawlClaim).
  crawlEnqueue: {
    numberOfKeys: 5,
    lua: `${enqueueBody(1, 'KEYS[5]')}\n${QUEUED}\nreturn {added, redis.call('EXISTS', KEYS[4]), held + spilled, held}`,
  },
  // The spilled tail of a host's frontier (src/redis/frontier-spill.ts).
  //
  // KEYS: frontier, spill, stats, current. ARGV: the segment's name, then
  // score/member pairs: the entries the
  // caller read from the frontier's tail and wrote to the segment's object.
  // If every one is still in the frontier at that score and none is the
  // claimed entry (\`current\`), they leave it, the segment is registered at
  // its lowest score and counted (stats \`spilled\`: entries in segments now;
  // \`segmentsSpilled\`: segments ever written, for the operator): 1. Else nothing changes
  // (0): a claim, a commit or another worker's spill moved them meanwhile,
  // and the caller removes its object. The caller holds the host's spill
  // lock meanwhile, so two workers seldom write the same tail; the check,
  // not the lock, is what keeps an entry from being both here and there.
  crawlSpill: {
    numberOfKeys: 4,
    lua: `
local n = (#ARGV - 1) / 2
if n < 1 then return 0 end
local cur = redis.call('GET', KEYS[4])
local low
for i = 2, #ARGV, 2 do
  local m = ARGV[i + 1]
  local at = redis.call('ZSCORE', KEYS[1], m)
  if not at or tonumber(at) ~= tonumber(ARGV[i]) or m == cur then return 0 end
  if not low or tonumber(ARGV[i]) < low then low = tonumber(ARGV[i]) end
end
local batch = {}
for i = 3, #ARGV, 2 do
  batch[#batch + 1] = ARGV[i]
  if #batch == 1000 then redis.call('ZREM', KEYS[1], unpack(batch)) batch = {} end
end
if #batch > 0 then redis.call('ZREM', KEYS[1], unpack(batch)) end
redis.call('ZADD', KEYS[2], string.format('%.0f', low), ARGV[1])
redis.call('HINCRBY', KEYS[3], 'spilled', n)
redis.call('HINCRBY', KEYS[3], 'segmentsSpilled', 1)
return 1`,
  },
  // A seed list's seeds landing in shared seed segments (src/redis/seed-segments.ts).
  //
  // KEYS: per host, its seen, frontier, seq, awake, stats and spill (hosts of
  // one slot: src/redis/seed-segments.ts groups them). ARGV: the campaign's
  // seen mode (src/redis/seen-set.ts SeenMode), then per host in KEYS' order:
  // its segment's name so far (its object and byte range), the number of its
  // block's entries, and one fingerprint/score-base pair per entry in block
  // order. For each host: marks the block's new fingerprints seen, as
  // crawlEnqueue would, numbers them from the host's discovery counter in
  // block order, and registers the block as one segment of the host at its
  // lowest score, its name completed with the first number and the 0-based
  // positions of the entries not taken (seen before: a retried call, a seed
  // listed twice), so a refill skips exactly those. Nothing new: nothing
  // registered. One script: an entry is marked seen exactly when its segment
  // is registered, so a worker killed before it leaves both undone (read
  // again), after it both done. Several hosts a call because a chunk over
  // many hosts gives each a block of a seed or two: the call, not the block,
  // was the cost. Returns {added, awake, queued} per host, as crawlEnqueue
  // does, one after another.
  crawlSeedRegister: {
    numberOfKeys: undefined,
    lua: `${SEEN_LUA}
${SEEN_COMMIT_LUA}
local out = {}
local a = 2
for h = 0, #KEYS / 6 - 1 do
  local K = h * 6
  local prefix, n = ARGV[a], tonumber(ARGV[a + 1])
  local fps, bases = {}, {}
  for i = a + 2, a + 1 + 2 * n, 2 do
    fps[#fps + 1] = ARGV[i]
    bases[#bases + 1] = tonumber(ARGV[i + 1])
  end
  a = a + 2 + 2 * n
  local added = 0
  if n > 0 then
    local seen = seenOpen(KEYS[K + 1], ARGV[1])
    local known = seenHasAll(seen, fps)
    local fresh, at, taken, skips = {}, {}, {}, {}
    for j = 1, n do
      if known[j] or taken[fps[j]] then
        skips[#skips + 1] = string.format('%d', j - 1)
      else
        taken[fps[j]] = true
        fresh[#fresh + 1] = fps[j]
        at[#at + 1] = j
      end
    end
    added = #fresh
    if added > 0 then
      seenCommit(seen, fresh, KEYS[K + 5])
      local first = redis.call('INCRBY', KEYS[K + 3], added) - added
      local low
      for r = 1, added do
        local s = bases[at[r]] + first + r
        if not low or s < low then low = s end
      end
      local name = prefix .. '.' .. string.format('%d', first)
      if #skips > 0 then name = name .. '.' .. table.concat(skips, ',') end
      redis.call('ZADD', KEYS[K + 6], string.format('%.0f', low), name)
      redis.call('HINCRBY', KEYS[K + 5], 'spilled', added)
    end
  end
  local held = redis.call('ZCARD', KEYS[K + 2])
  local spilled = tonumber(redis.call('HGET', KEYS[K + 5], 'spilled') or '0')
  out[#out + 1] = added
  out[#out + 1] = redis.call('EXISTS', KEYS[K + 4])
  out[#out + 1] = held + spilled
end
return out`,
  },
  // KEYS: a lock. ARGV: its holder's token. Lets the lock go if it is still
  // that holder's (it may have run out and been taken by another): 1 if so.
  crawlUnlock: {
    numberOfKeys: 1,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`,
  },
  // KEYS: frontier, spill, stats, read back. ARGV: a segment's name, then
  // the score/member pairs its object holds. Only while the segment is
  // registered: its entries go back into the frontier (NX: one there
  // already keeps its place), it is unregistered and uncounted, and noted
  // read back now (Redis clock) for its object to be removed once this write
  // is surely on disk (crawlSpillAged); 1. Else (another refill took it)
  // nothing changes: 0.
  crawlRefill: {
    numberOfKeys: 4,
    lua: `
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return 0 end
local n = (#ARGV - 1) / 2
local batch = {}
for i = 2, #ARGV, 2 do
  batch[#batch + 1] = ARGV[i]
  batch[#batch + 1] = ARGV[i + 1]
  if #batch == 2000 then redis.call('ZADD', KEYS[1], 'NX', unpack(batch)) batch = {} end
end
if #batch > 0 then redis.call('ZADD', KEYS[1], 'NX', unpack(batch)) end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HINCRBY', KEYS[3], 'spilled', -n)
${NOW_MS}
redis.call('ZADD', KEYS[4], now, ARGV[1])
return 1`,
  },
  // KEYS: read back (segment → when). ARGV: grace ms, most to list. The
  // segments read back at least grace ms ago (Redis clock), whose objects may
  // go, and the ms until the youngest other one is that old (-1: none).
  crawlSpillAged: {
    numberOfKeys: 1,
    lua: `
${NOW_MS}
local grace = tonumber(ARGV[1])
local aged = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - grace, 'LIMIT', 0, tonumber(ARGV[2]))
local young = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - grace), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local wait = -1
if #young > 0 then wait = tonumber(young[2]) + grace - now end
return {aged, wait}`,
  },
  // KEYS: seen. ARGV: the campaign's seen mode (SeenMode), URL fingerprints (seenArg's form). Marks
  // them seen (src/redis/seen-set.ts) without enqueueing them; returns how many were new.
  crawlSeenAdd: {
    numberOfKeys: 1,
    lua: `${SEEN_LUA}
local fps = {unpack(ARGV, 2)}
local st = seenOpen(KEYS[1], ARGV[1])
local known = seenHasAll(st, fps)
local fresh, taken = {}, {}
for i = 1, #fps do
  if not known[i] and not taken[fps[i]] then
    taken[fps[i]] = true
    fresh[#fresh + 1] = fps[i]
  end
end
seenAddAll(st, fresh)
seenClose(st)
return #fresh`,
  },
  // KEYS: seen. ARGV: the campaign's seen mode (SeenMode), URL fingerprints (seenArg's form). For
  // each fingerprint, 1 when the host has seen it, else 0.
  crawlSeenTest: {
    numberOfKeys: 1,
    lua: `${SEEN_LUA}
local fps = {unpack(ARGV, 2)}
local known = seenHasAll(seenOpen(KEYS[1], ARGV[1]), fps)
local out = {}
for i = 1, #fps do out[i] = known[i] and 1 or 0 end
return out`,
  },
  // KEYS: session, fence. ARGV: the attempt's token, ttlMs, floor (0: none).
  // Makes the attempt the host's owner under a fencing number higher than
  // every earlier attempt's, and than `floor`: the newest number a host
  // clock has seen, which the counter can fall behind only when Redis lost
  // its last writes (a crash, a failover). Returns {n, owner}: the session
  // key holds `owner` (`<n>/<token>`), which every fenced write compares.
  crawlTakeOver: {
    numberOfKeys: 2,
    lua: `
local n = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[3] or '0')
if n <= floor then
  n = floor + 1
  redis.call('SET', KEYS[2], string.format('%d', n))
end
local owner = string.format('%d', n) .. '/' .. ARGV[1]
redis.call('SET', KEYS[1], owner, 'PX', tonumber(ARGV[2]))
return {n, owner}`,
  },
  // KEYS: frontier, current, awake, attempts, session, spill, stats. ARGV: the session
  // attempt's owner value ('' = no fencing). {'', -1} when another session attempt
  // owns the host (this one is a zombie whose heartbeat or workflow task timed
  // out: it must stop). Else {member, attempts}:
  // the entry being worked on (sticky until committed, so a session retried
  // after its worker died retries the same URL) and how often it has been
  // claimed, this time included; nil when the frontier is empty. Finding it
  // empty clears the awake flag atomically, so an enqueue either lands before
  // this claim (and is claimed) or after it (and sees the flag cleared, and
  // marks the host ready). {segment, -2} when a new head is due and a
  // segment of the spilled tail (src/redis/frontier-spill.ts) holds an entry
  // ahead of the head in Redis, or the sorted set is empty and a segment is
  // left: the caller reads that segment back (crawlRefill) and claims again,
  // so the entry claimed is always the lowest of the sorted set and of every
  // segment, and a host is never drained while segments are left. Nothing
  // is changed then (awake stays: the host is not drained).
  crawlClaim: {
    numberOfKeys: 7,
    lua: `
if ARGV[1] ~= '' and redis.call('GET', KEYS[5]) ~= ARGV[1] then return {'', -1} end
local cur = redis.call('GET', KEYS[2])
if not (cur and redis.call('ZSCORE', KEYS[1], cur)) then
  local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  local seg = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
  if #seg > 0 and (#head == 0 or tonumber(seg[2]) < tonumber(head[2])) then return {seg[1], -2, 0} end
  if #head == 0 then redis.call('DEL', KEYS[2], KEYS[3]) return false end
  cur = head[1]
  redis.call('SET', KEYS[2], cur)
end
redis.call('SET', KEYS[3], '1')
-- Claims so far, this one included, and how many of them ended in a deliberate retry (a 5xx, a 429, a network error: field member.."\0r").
return {cur, redis.call('HINCRBY', KEYS[4], cur, 1), tonumber(redis.call('HGET', KEYS[4], cur .. '\0r') or '0')}`,
  },
  // KEYS: seen, frontier, seq, current, stats, attempts, committed, session,
  // unsealed. ARGV: member, statField, bytes, fp, attempt id, the session
  // attempt's owner value ('' = no fencing), keep ('1': the output is in a
  // bucket, so the commit's undo record is kept under the fingerprint in
  // `unsealed` until a seal finds its line: crawlUncommit), page bound,
  // sitemap bound, the seen mode, then enqueue quadruples. Returns {removed, added, remaining, in Redis}: remaining
  // counts the entries spilled to segments too (crawlEnqueue). {-1, 0, 0} and nothing written when another session attempt
  // owns the host (this one was presumed dead and must not count). Removes
  // the finished entry, counts it once, forgets its attempts and enqueues its
  // same-host links. The commit that removes the entry is the one that
  // counts: it records its attempt's id under the URL's fingerprint, which
  // is how sealing tells the committed index line from the lines of
  // attempts that died or lost (src/storage/seal.ts). A later commit of the
  // same entry (an attempt that lost the race) changes nothing.
  crawlCommit: {
    numberOfKeys: 9,
    lua: `
if ARGV[6] ~= '' and redis.call('GET', KEYS[8]) ~= ARGV[6] then return {-1, 0, 0} end
-- The entry's score before it leaves: an un-commit puts it back in its old place.
local score = redis.call('ZSCORE', KEYS[2], ARGV[1])
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('DEL', KEYS[4]) end
redis.call('HDEL', KEYS[6], ARGV[1], ARGV[1] .. '\0r')
if removed == 1 then
  redis.call('HINCRBY', KEYS[5], ARGV[2], 1)
  redis.call('HINCRBY', KEYS[5], 'bytes', tonumber(ARGV[3]))
  -- An embed leaves the frontier: queued pages are the frontier less the embeds still in it.
  if string.sub(ARGV[2], 1, 6) == 'embeds' and tonumber(redis.call('HGET', KEYS[5], 'embedsQueued') or '0') > 0 then
    redis.call('HINCRBY', KEYS[5], 'embedsQueued', -1)
  end
  if ARGV[5] ~= '' then
    redis.call('HSET', KEYS[7], ARGV[4], ARGV[5])
    -- Member last: it holds tabs itself. An id in 6 binary bytes (src/redis/sealing-state.ts) may hold
    -- a tab too: such a record starts with a NUL byte, which no id of text starts with, and has the id at a fixed width.
    local id = #ARGV[5] == 6 and ('\0' .. ARGV[5]) or (ARGV[5] .. '\t')
    if ARGV[7] == '1' then redis.call('HSET', KEYS[9], ARGV[4], id .. score .. '\t' .. ARGV[2] .. '\t' .. ARGV[3] .. '\t' .. ARGV[1]) end
  end
end
${enqueueBody(8, 'KEYS[5]')}
${QUEUED}
return {removed, added, held + spilled, held}`,
  },
  // KEYS: frontier, stats, committed, unsealed. ARGV: fingerprints whose
  // committed line a seal did not find in the bucket (the worker that held
  // it lost its disk). Undoes each such commit (the counters it moved, its
  // committed attempt id) and puts its entry back in the frontier at its old
  // score, so the URL is fetched again and its new commit counts. Only the
  // commit recorded in `unsealed` is undone: a fingerprint whose committed id
  // is another (committed again since) or none (undone already) is left, so
  // a retried call changes nothing. The undo record stays until the new
  // commit replaces it. Returns {undone, frontier size} (spilled entries included).
  crawlUncommit: {
    numberOfKeys: 4,
    lua: `
local undone = 0
for i = 1, #ARGV do
  local rec = redis.call('HGET', KEYS[4], ARGV[i])
  if rec then
    local id, score, field, bytes, member
    if string.byte(rec, 1) == 0 then
      id = string.sub(rec, 2, 7)
      score, field, bytes, member = string.match(string.sub(rec, 8), '^([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
    else
      id, score, field, bytes, member = string.match(rec, '^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$')
    end
    if id and redis.call('HGET', KEYS[3], ARGV[i]) == id then
      redis.call('HDEL', KEYS[3], ARGV[i])
      redis.call('HINCRBY', KEYS[2], field, -1)
      redis.call('HINCRBY', KEYS[2], 'bytes', -tonumber(bytes))
      if string.sub(field, 1, 6) == 'embeds' then redis.call('HINCRBY', KEYS[2], 'embedsQueued', 1) end
      redis.call('ZADD', KEYS[1], score, member)
      undone = undone + 1
    end
  end
end
return {undone, redis.call('ZCARD', KEYS[1]) + tonumber(redis.call('HGET', KEYS[2], 'spilled') or '0')}`,
  },
  // KEYS: attempts, session. ARGV: member, the session attempt's owner value
  // ('' = no fencing). This claim of the member ended in a deliberate retry;
  // -1 and nothing written when another session attempt owns the host.
  crawlNoteRetry: {
    numberOfKeys: 2,
    lua: `
if ARGV[2] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[2] then return -1 end
return redis.call('HINCRBY', KEYS[1], ARGV[1] .. '\0r', 1)`,
  },
  // KEYS: clock, fence. ARGV: owner, leaseMs, delayMs, holder, fencing
  // number (0 = unfenced: robots.txt, another host's request of a rendered
  // page, callers of releases before fencing). Returns 0 when the caller
  // may send a request now (it then holds the clock for leaseMs), -1 when a
  // session attempt of the owner with a higher fencing number has been seen
  // (this one is superseded: it may never take the clock again), else ms to
  // wait. A retry of the same step (same owner) whose earlier attempt died
  // holding the lease may go once delayMs have passed since that attempt
  // started (its grant, or its request's stamp: crawlClockStamp), so a crash
  // neither breaks the spacing nor stalls the host for a
  // whole lease. Uses the Redis clock so all machines agree on "now".
  //
  // A Redis crash may take the clock's last stamps with it (appendfsync
  // everysec: about the last second), and so may a failover (replication is
  // asynchronous: the promoted replica lacks the stream's tail); the clock
  // would then let a request go too early. `epoch` keeps the run ID of the
  // server that last granted the clock, and the run ID tells servers apart:
  // new on every start, a replica's own once promoted. A clock granted by
  // another server is trusted again a delay after this one first sees it: any
  // stamp lost was made before that. Not the server's uptime: a promoted
  // replica has been up for long, but not as the server that granted the clock.
  // A clock that is not there at all (first use, expired, or lost whole) has
  // no run ID to compare: it is trusted once the server has been up for the
  // delay, which covers a restart. Costs nothing but one delay per host after
  // a restart or failover (INFO SERVER is read inside the script: on a
  // cluster, from the node that holds the clock).
  crawlClockAcquire: {
    numberOfKeys: 2,
    lua: `
local fence = tonumber(ARGV[5] or '0')
local newest = 0
if fence > 0 then
  newest = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
  if fence < newest then return -1 end
end
${NOW_MS}
local h = redis.call('HMGET', KEYS[1], 'next', 'owner', 'since', 'last', 'epoch')
-- No delay, no spacing to protect: INFO, the heaviest call here, is left
-- out and the clock keeps the run ID it had (a caller with a delay then
-- trusts it no sooner than before).
local run, info = h[5], nil
if tonumber(ARGV[3]) > 0 then
  info = redis.call('INFO', 'server')
  run = string.match(info, 'run_id:(%w+)') or ''
end
if h[5] ~= run then
  if h[5] then
    -- Another server granted it: no request before a delay from now (a
    -- lease still running keeps its own end if later). 'since' too, so a
    -- retry of the lease's owner is held as long.
    local hold = math.max(tonumber(h[1] or '0'), now + tonumber(ARGV[3]))
    local last = math.max(tonumber(h[4] or '0'), now)
    redis.call('HSET', KEYS[1], 'next', string.format('%.0f', hold), 'since', string.format('%.0f', now), 'last', string.format('%.0f', last), 'epoch', run)
    if redis.call('PTTL', KEYS[1]) < hold - now + 60000 then redis.call('PEXPIRE', KEYS[1], hold - now + 60000) end
    return tonumber(ARGV[3])
  end
  -- Whole seconds of uptime: up * 1000 is at most the time since the start.
  local up = tonumber(string.match(info, 'uptime_in_seconds:(%d+)') or '0') * 1000
  if up < tonumber(ARGV[3]) then return tonumber(ARGV[3]) - up end
end
local nxt = tonumber(h[1] or '0')
-- The caller's own delay counts from the end of the host's last request,
-- whoever sent it: a delay raised since then applies to the very next request.
local due = tonumber(h[4] or '0') + tonumber(ARGV[3])
if (h[2] == false or h[2] == '') and now < due and due > nxt then return due - now end
if now < nxt then
  -- Held by someone else's request in flight: its lease runs until its
  -- timeout, but it will most likely end much sooner, so look again after
  -- about one delay instead of sleeping out the lease.
  if h[2] and h[2] ~= '' and h[2] ~= ARGV[1] then return math.min(nxt - now, math.max(tonumber(ARGV[3]), 250)) end
  if h[2] ~= ARGV[1] then return nxt - now end
  local ok = tonumber(h[3] or '0') + tonumber(ARGV[3])
  if now < ok then return ok - now end
end
local lease = tonumber(ARGV[2])
local grant = {'next', string.format('%.0f', now + lease), 'owner', ARGV[1], 'since', string.format('%.0f', now), 'holder', ARGV[4] or ''}
if run then
  grant[#grant + 1] = 'epoch'
  grant[#grant + 1] = run
end
redis.call('HSET', KEYS[1], unpack(grant))
redis.call('PEXPIRE', KEYS[1], lease + 60000)
if fence > newest then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[2], ${CLOCK_FENCE_TTL_MS})
end
return 0`,
  },
  // KEYS: clock, fence. ARGV: owner, holder, fencing number (0 = unfenced),
  // leaseMs. Just before the holder's request goes out (after its wait for an
  // address slot, which may be long): 1 when the clock is still this
  // holder's and no newer attempt of the owner has been seen; the lease then
  // runs leaseMs from now and `since` is now, so another attempt of the owner
  // takes the clock over no sooner than a delay after this request went out.
  // 0, nothing changed: the request must not go.
  crawlClockStamp: {
    numberOfKeys: 2,
    lua: `
local h = redis.call('HMGET', KEYS[1], 'owner', 'holder')
if h[1] ~= ARGV[1] or h[2] ~= ARGV[2] then return 0 end
local fence = tonumber(ARGV[3])
if fence > 0 and fence < tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') then return 0 end
${NOW_MS}
local lease = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', now + lease), 'since', string.format('%.0f', now))
if redis.call('PTTL', KEYS[1]) < lease + 60000 then redis.call('PEXPIRE', KEYS[1], lease + 60000) end
return 1`,
  },
  // KEYS: fence. ARGV: owner, fencing number. A session attempt that just
  // took its host over makes its number known to the host's clock at once,
  // so an older attempt still waiting to send (for the clock, for an address
  // slot) is refused from now on, before the new attempt takes the clock.
  // Returns the newest number seen (higher than the caller's: a newer
  // attempt registered first, or the host's counter fell behind).
  crawlClockFence: {
    numberOfKeys: 1,
    lua: `
local newest = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > newest then
  newest = tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ${CLOCK_FENCE_TTL_MS})
return newest`,
  },
  // KEYS: clock. ARGV: owner, delayMs, holder, idleMs. The next request may go
  // out delayMs after the host's last request ended: idleMs ago (a rendered
  // page's last request to its host, the render's end being later; 0: now);
  // `last` keeps when it ended, so a caller with a longer delay of its own
  // waits that long from it (crawlClockAcquire). Returns the
  // ms until the next request may go (delayMs, or longer when a wait already
  // set ends later; 0 when someone else holds the clock now): the session
  // waits that out before its next acquire rather than ask twice.
  crawlClockRelease: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
-- Rounded up here and down in crawlClockAcquire: the gap is never a fraction of a millisecond short.
local now = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
local idle = math.min(math.max(tonumber(ARGV[4] or '0') or 0, 0), tonumber(ARGV[2]))
local nxt = now + tonumber(ARGV[2]) - idle
local cur = redis.call('HMGET', KEYS[1], 'owner', 'holder')
local owner = cur[1]
-- The same owner's lease taken over by another attempt (a session retried
-- while the first still ran): this late end is not the holder's either.
-- (No holder field: granted before holders were kept.)
local superseded = owner == ARGV[1] and cur[2] and cur[2] ~= (ARGV[3] or '')
if (owner and owner ~= '' and owner ~= ARGV[1]) or superseded then
  -- Our lease expired and someone else holds the clock now: their lease is
  -- neither cleared nor shortened; our late end only pushes the next request back.
  nxt = math.max(nxt, tonumber(redis.call('HGET', KEYS[1], 'next') or '0'))
  redis.call('HSET', KEYS[1], 'next', string.format('%.0f', nxt), 'last', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], math.max(nxt - now, 0) + 60000)
  -- Their lease may end long before its time: nothing known to wait out (crawlClockAcquire decides).
  return 0
end
if owner ~= ARGV[1] then nxt = math.max(nxt, tonumber(redis.call('HGET', KEYS[1], 'next') or '0')) end
local last = math.max(now - idle, tonumber(redis.call('HGET', KEYS[1], 'last') or '0'))
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', nxt), 'owner', '', 'last', string.format('%.0f', last))
-- Kept as long as the next allowed time it holds: a late release after a
-- long Retry-After must not let that wait expire with the key.
redis.call('PEXPIRE', KEYS[1], math.max(nxt - now, 0) + 60000)
return math.max(nxt - now, 0)`,
  },
  // KEYS: clock. ARGV: owner, holder. A lease taken and not used (no request went
  // out): the clock is free at once and `last` keeps the end of the host's
  // real last request. Someone else's lease is left alone.
  crawlClockAbandon: {
    numberOfKeys: 1,
    lua: `
local cur = redis.call('HMGET', KEYS[1], 'owner', 'holder')
if cur[1] ~= ARGV[1] then return 0 end
-- Another attempt of the same owner holds it now (see crawlClockRelease).
if cur[2] and cur[2] ~= (ARGV[2] or '') then return 0 end
local t = redis.call('TIME')
-- Rounded down, as crawlClockAcquire does: the clock is free now, not a millisecond from now.
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', now), 'owner', '')
return 1`,
  },
  // KEYS: budget. ARGV: fingerprint, max. 1 = the URL holds a slot (idempotent per URL), 0 = budget spent.
  crawlBudgetReserve: {
    numberOfKeys: 1,
    lua: `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1`,
  },
  // KEYS: ready, readySeq, givenUp, active. ARGV: hosts. Marks hosts ready
  // to be dispatched (their frontier has URLs and no session consumes it). A
  // host already ready moves to a newer sequence number, which tells a
  // dispatch in flight that it must not drop the host (crawlDispatched).
  // Hosts given up are not marked, nor hosts that hold a slot: their session
  // will claim the URLs, or (if it drained meanwhile) finds them when it
  // gives the slot up and marks the host itself. Returns how many became
  // ready (were not ready already): callers nudge the campaign on that, and a
  // session that links to hosts already waiting has no news to give.
  crawlMarkReady: {
    numberOfKeys: 4,
    lua: `
local n = 0
for i = 1, #ARGV do
  if redis.call('SISMEMBER', KEYS[3], ARGV[i]) == 0 and redis.call('HEXISTS', KEYS[4], ARGV[i]) == 0 then
    if not redis.call('ZSCORE', KEYS[1], ARGV[i]) then n = n + 1 end
    redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[2]), ARGV[i])
  end
end
return n`,
  },
  // KEYS: control, pausedHosts, hostDelays, hostRender, givenUp. ARGV: host.
  // What a session reads between pages (CampaignHosts.sessionControl): the
  // control hash's fields, then whether the host is paused, its operator
  // delay, its render mode and whether it was given up (its workflow was
  // terminated or cancelled by hand), as one command rather than five.
  crawlSessionControl: {
    numberOfKeys: 5,
    lua: `
local c = redis.call('HMGET', KEYS[1], 'version', 'paused', 'stop', 'minDelayMs', 'maxActiveHosts')
return {c[1], c[2], c[3], c[4], c[5], redis.call('SISMEMBER', KEYS[2], ARGV[1]), redis.call('HGET', KEYS[3], ARGV[1]), redis.call('HGET', KEYS[4], ARGV[1]), redis.call('SISMEMBER', KEYS[5], ARGV[1])}`,
  },
  // KEYS: ready, active. ARGV: host, readySeq seen by the dispatch, gen.
  // After the host's workflow was started or signalled with this
  // generation: it holds the host's slot. The ready entry goes only if no
  // enqueue marked the host again since the dispatch read it.
  crawlDispatched: {
    numberOfKeys: 2,
    lua: `
local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if tonumber(ARGV[3]) > cur then redis.call('HSET', KEYS[2], ARGV[1], ARGV[3]) end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 1`,
  },
  // KEYS: lock. ARGV: token, holdMs. A lock (SET NX PX) its holder renews while
  // it works: only while it still holds it. Returns 1 if renewed, 0 if not its own.
  crawlLockRenew: {
    numberOfKeys: 1,
    lua: `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`,
  },
  // KEYS: active, ready. ARGV: host, gen. A host workflow whose frontier
  // ran dry gives its slot up, unless a newer dispatch (a wake it has not
  // seen yet) holds it. Returns {released, active hosts left, ready hosts}.
  crawlRelease: {
    numberOfKeys: 2,
    lua: `
local released = 0
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  released = 1
end
return {released, redis.call('HLEN', KEYS[1]), redis.call('ZCARD', KEYS[2])}`,
  },
  // KEYS: active, ready, parked. ARGV: host, gen, due in ms, capped (1/0).
  // A revisit host with nothing due for a while is parked until its next
  // revisit is due by the Redis clock: 1 when generation ARGV[2] holds its
  // slot, the campaign is capped and hosts wait (the slot is given up); 2
  // when it is parked already, nobody holds its slot and no dispatch is on
  // its way (not in ready): a wake made its workflow run on after parking,
  // and parked again it never sleeps out of the campaign's sight; 0
  // otherwise (it keeps its slot, or a dispatch holds it or is on its way,
  // as crawlRelease). Returns {how, active, ready}.
  crawlPark: {
    numberOfKeys: 3,
    lua: `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local how = 0
if cur == ARGV[2] then
  if ARGV[4] == '1' and redis.call('ZCARD', KEYS[2]) > 0 then
    redis.call('HDEL', KEYS[1], ARGV[1])
    how = 1
  end
elseif not cur and redis.call('ZSCORE', KEYS[3], ARGV[1]) and not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  how = 2
end
if how > 0 then
  ${NOW_MS}
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
end
return {how, redis.call('HLEN', KEYS[1]), redis.call('ZCARD', KEYS[2])}`,
  },
  // KEYS: active, ready, parked. ARGV: host, due (epoch ms, Redis clock).
  // The sweep after a lost write: a revisit host neither holding a slot,
  // waiting for one nor parked is parked at its next revisit. 1 if it was.
  crawlParkIfIdle: {
    numberOfKeys: 3,
    lua: `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 or redis.call('ZSCORE', KEYS[2], ARGV[1]) or redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1`,
  },
  // KEYS: parked, ready, readySeq, givenUp, active. ARGV: most to move.
  // Parked hosts whose revisit is due (Redis clock) leave the parked set for
  // ready, behind the hosts already waiting; one that holds a slot again
  // (new URLs got it dispatched) or was given up just leaves. Returns how
  // many became ready.
  crawlUnpark: {
    numberOfKeys: 5,
    lua: `
${NOW_MS}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local n = 0
for _, h in ipairs(due) do
  redis.call('ZREM', KEYS[1], h)
  if redis.call('SISMEMBER', KEYS[4], h) == 0 and redis.call('HEXISTS', KEYS[5], h) == 0 and not redis.call('ZSCORE', KEYS[2], h) then
    redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), h)
    n = n + 1
  end
end
return n`,
  },
  // KEYS: hosts, totals, attention. ARGV: host, record JSON, attention
  // score (ignored for a host given up, which keeps its place). Replaces the host's record and moves the campaign totals by the
  // difference, so writing the same record twice changes nothing. A record
  // with fewer finished URLs than the stored one is stale (an older
  // session's late write) and is ignored. Returns 1 if written.
  crawlHostRecord: {
    numberOfKeys: 3,
    lua: `
local new = cjson.decode(ARGV[2])
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local old = {${RECORD_SUMS.map((f) => `${f} = 0`).join(', ')}}
if raw then old = cjson.decode(raw) else redis.call('HINCRBY', KEYS[2], 'hosts', 1) end
local function done(r) return ${[...PAGE_COUNTS.map((f) => `r.${f}`), ...EMBED_COUNTS.map((f) => `(r.${f} or 0)`)].join(' + ')} end
if raw and done(new) < done(old) then return 0 end
for _, f in ipairs({${RECORD_SUMS.map((f) => `'${f}'`).join(', ')}}) do
  local d = (tonumber(new[f]) or 0) - (tonumber(old[f]) or 0)
  if d ~= 0 then redis.call('HINCRBY', KEYS[2], f, d) end
end
local record = ARGV[2]
-- A host given up stays given up, whatever a session still running writes.
if old.state == 'given-up' and new.state ~= 'given-up' then
  new.state = 'given-up'
  record = cjson.encode(new)
end
redis.call('HSET', KEYS[1], ARGV[1], record)
if new.state ~= 'given-up' or old.state ~= 'given-up' then redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1]) end
return 1`,
  },
  // KEYS: revisit, frontier, seq. ARGV: most to move, hourMs, dayMs.
  // Moves the host's revisits that are due (Redis clock) into its frontier,
  // past the seen-set (these URLs were seen: that is the point), scored
  // by depth then discovery like any entry; a member still in the frontier
  // stays where it is. Returns {moved, ms until the earliest one left is
  // due (-1: none), due within an hour, due within a day, scheduled}.
  crawlRevisitDue: {
    numberOfKeys: 3,
    lua: `
${NOW_MS}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local moved = 0
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  if not redis.call('ZSCORE', KEYS[2], m) then
    -- The depth leads the member: its first characters in the older form, after its flag character in the compact one (src/redis/frontier.ts).
    local depth = math.min(tonumber(string.match(m, '^(%d+)') or string.match(m, '^[@-~](%d+)') or '0'), 999)
    local n = redis.call('INCR', KEYS[3])
    redis.call('ZADD', KEYS[2], string.format('%.0f', depth * 1e12 + n), m)
    moved = moved + 1
  end
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = -1
if #head > 0 then wait = math.max(0, tonumber(head[2]) - now) end
return {moved, wait, redis.call('ZCOUNT', KEYS[1], '-inf', now + tonumber(ARGV[2])), redis.call('ZCOUNT', KEYS[1], '-inf', now + tonumber(ARGV[3])), redis.call('ZCARD', KEYS[1])}`,
  },
  // KEYS: revisit, meta, stats. ARGV: member, fp, interval ms (-1: leave
  // the schedule), meta JSON ('' = forget it), verdict counter field ('' =
  // none). The next visit of a URL, due interval ms from now (Redis clock).
  crawlRevisitSet: {
    numberOfKeys: 3,
    lua: `
${NOW_MS}
local i = tonumber(ARGV[3])
if i < 0 then redis.call('ZREM', KEYS[1], ARGV[1]) else redis.call('ZADD', KEYS[1], string.format('%.0f', now + i), ARGV[1]) end
if ARGV[4] == '' then redis.call('HDEL', KEYS[2], ARGV[2]) else redis.call('HSET', KEYS[2], ARGV[2], ARGV[4]) end
if ARGV[5] ~= '' then redis.call('HINCRBY', KEYS[3], ARGV[5], 1) end
return 1`,
  },
  // The worker processes' liveness (src/redis/worker-registry.ts). Leases
  // are kept by the Redis clock, so workers whose clocks disagree agree on
  // which lease ran out.
  //
  // KEYS: leases. ARGV: worker id, lease ms. A worker process joins: its
  // lease runs lease ms from now.
  crawlWorkerJoin: {
    numberOfKeys: 1,
    lua: `
${NOW_MS}
redis.call('ZADD', KEYS[1], string.format('%d', now + tonumber(ARGV[2])), ARGV[1])
return 1`,
  },
  // KEYS: leases, reaping (this worker's), last beat. ARGV: worker id, lease
  // ms, most to list. The worker's beat: its lease renewed while it has not
  // run out. A lease that ran out is never renewed (0), even before a live
  // worker took its cleanup: its hosts may be told at any moment from then
  // on, so its sessions are presumed lost and the worker joins again under a
  // new id (the old one is left for a live worker to clean up). Then the ids
  // of workers whose lease ran out, for the caller to clean up.
  // When no worker beat for over half a lease (last beat), the silence was
  // Redis's (an outage, a failover) or everyone's, not one worker's: every
  // lease is moved on by the silence first, so none runs out for it (a worker
  // dead meanwhile is found a lease later). Half, not a whole lease: the
  // workers' last beats before the silence are up to a beat apart, so a
  // silence a little shorter than a lease already outlasts the lease of the
  // worker that beat first, and it would be taken for dead. Live workers beat
  // six times a lease, so half a lease of silence is never theirs alone.
  // Returns {1 | 0, {expired ids}}.
  crawlWorkerBeat: {
    numberOfKeys: 3,
    lua: `
${NOW_MS}
local leaseMs = tonumber(ARGV[2])
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if last > 0 and now - last > leaseMs / 2 then
  local all = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
  for i = 1, #all, 2 do
    redis.call('ZADD', KEYS[1], 'XX', string.format('%d', tonumber(all[i + 1]) + now - last), all[i])
  end
end
redis.call('SET', KEYS[3], string.format('%d', now))
local live = 0
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 0 and expires and tonumber(expires) >= now then
  redis.call('ZADD', KEYS[1], 'XX', string.format('%d', now + leaseMs), ARGV[1])
  live = 1
end
return {live, redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. string.format('%d', now), 'LIMIT', 0, tonumber(ARGV[3]))}`,
  },
  // KEYS: leases, reaping, sessions (this worker's). ARGV: worker id,
  // field, value. A regular session opens on this worker: recorded, unless
  // the worker's lease ran out (it may be cleaned up as dead any moment, or
  // was): 0, and it must join again first.
  crawlWorkerRegister: {
    numberOfKeys: 3,
    lua: `
${NOW_MS}
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 or not expires or tonumber(expires) < now then return 0 end
redis.call('HSET', KEYS[3], ARGV[2], ARGV[3])
return 1`,
  },
  // KEYS: leases, reaping, sessions (a worker's whose lease ran out). ARGV:
  // its id, the claimer's id, claim ms. One live worker takes the cleanup
  // (held claim ms: one that dies meanwhile leaves it to another) and gets
  // the dead worker's sessions; false when its lease did not run out (it
  // renewed since) or another worker holds the cleanup.
  crawlWorkerClaim: {
    numberOfKeys: 3,
    lua: `
${NOW_MS}
local expires = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not expires or tonumber(expires) >= now then return false end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', tonumber(ARGV[3])) then return false end
return redis.call('HGETALL', KEYS[3])`,
  },
  // KEYS: leases, reaping, sessions (the dead worker's). ARGV: its id, the
  // claimer's id. Its hosts were told: the worker and its records go. 0
  // when the claim was lost meanwhile (it expired, another worker took it).
  crawlWorkerReaped: {
    numberOfKeys: 3,
    lua: `
if redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[3], KEYS[2])
return 1`,
  },
  // KEYS: leases, reaping, sessions (this worker's). ARGV: worker id. A
  // worker that stops leaves, if no session of its own is still recorded
  // (1): else (0) its lease runs out and a live worker tells those hosts.
  crawlWorkerLeave: {
    numberOfKeys: 3,
    lua: `
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('HLEN', KEYS[3]) > 0 then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1`,
  },
  // KEYS: any keys of one slot (numkeys is the first argument). ARGV: ms.
  // The campaign's retention (src/redis/retention.ts): a time to live on
  // every key that exists, in one round trip per slot.
  crawlExpireKeys: {
    numberOfKeys: undefined,
    lua: `
local n = 0
for i = 1, #KEYS do n = n + redis.call('PEXPIRE', KEYS[i], ARGV[1]) end
return n`,
  },
  // KEYS: keys of one slot, those to delete first. ARGV: how many of KEYS
  // to delete, ms (0: none). retention.keep summary (src/redis/retention.ts):
  // the working state goes (UNLINK: a large seen-set is freed off the main
  // thread), the rest gets the retention, one round trip per slot. Returns
  // how many keys were deleted; a retry deletes nothing more and sets the
  // same time to live again.
  crawlRetainKeys: {
    numberOfKeys: undefined,
    lua: `
local d = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local n = 0
for i = 1, d do n = n + redis.call('UNLINK', KEYS[i]) end
if ttl > 0 then
  for i = d + 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return n`,
  },
} as const;

type ScriptArgs = (string | number | Buffer)[];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlEnqueue(seen: string, frontier: string, seq: string, awake: string, stats: string, ...argv: ScriptArgs): Result<[number, number, number, number], Context>;
    crawlSpill(frontier: string, spill: string, stats: string, current: string, segment: string, ...pairs: string[]): Result<number, Context>;
    crawlUnlock(lock: string, token: string): Result<number, Context>;
    crawlSeedRegister(numKeys: number, ...keysThenArgv: ScriptArgs): Result<number[], Context>;
    crawlRefill(frontier: string, spill: string, stats: string, readBack: string, segment: string, ...pairs: string[]): Result<number, Context>;
    crawlSpillAged(readBack: string, graceMs: number, limit: number): Result<[string[], number], Context>;
    crawlSeenAdd(seen: string, mode: string, ...fps: (string | Buffer)[]): Result<number, Context>;
    crawlSeenTest(seen: string, mode: string, ...fps: (string | Buffer)[]): Result<number[], Context>;
    crawlTakeOver(session: string, fence: string, token: string, ttlMs: number, floor: number): Result<[number, string], Context>;
    crawlClaim(
      frontier: string,
      current: string,
      awake: string,
      attempts: string,
      session: string,
      spill: string,
      stats: string,
      owner: string,
    ): Result<[string, number, number] | null, Context>;
    crawlCommit(
      seen: string,
      frontier: string,
      seq: string,
      current: string,
      stats: string,
      attempts: string,
      committed: string,
      session: string,
      unsealed: string,
      ...argv: ScriptArgs
    ): Result<[number, number, number, number], Context>;
    crawlUncommit(frontier: string, stats: string, committed: string, unsealed: string, ...fps: (string | Buffer)[]): Result<[number, number], Context>;
    crawlNoteRetry(attempts: string, session: string, member: string, owner: string): Result<number, Context>;
    crawlClockAcquire(clock: string, fence: string, owner: string, leaseMs: number, delayMs: number, holder: string, fenceNumber: number): Result<number, Context>;
    crawlClockStamp(clock: string, fence: string, owner: string, holder: string, fenceNumber: number, leaseMs: number): Result<number, Context>;
    crawlClockFence(fence: string, owner: string, fenceNumber: number): Result<number, Context>;
    crawlClockRelease(clock: string, owner: string, delayMs: number, holder: string, idleMs: number): Result<number, Context>;
    crawlClockAbandon(clock: string, owner: string, holder: string): Result<number, Context>;
    crawlBudgetReserve(budget: string, fp: string, max: number): Result<number, Context>;
    crawlSessionControl(
      control: string,
      pausedHosts: string,
      hostDelays: string,
      hostRender: string,
      givenUp: string,
      host: string,
    ): Result<[string | null, string | null, string | null, string | null, string | null, number, string | null, string | null, number], Context>;
    crawlMarkReady(ready: string, readySeq: string, givenUp: string, active: string, ...hosts: string[]): Result<number, Context>;
    crawlLockRenew(lock: string, token: string, holdMs: number): Result<number, Context>;
    crawlDispatched(ready: string, active: string, host: string, readySeq: string, gen: number): Result<number, Context>;
    crawlRelease(active: string, ready: string, host: string, gen: number): Result<[number, number, number], Context>;
    crawlPark(active: string, ready: string, parked: string, host: string, gen: number, dueInMs: number, capped: number): Result<[number, number, number], Context>;
    crawlParkIfIdle(active: string, ready: string, parked: string, host: string, dueAt: number): Result<number, Context>;
    crawlUnpark(parked: string, ready: string, readySeq: string, givenUp: string, active: string, limit: number): Result<number, Context>;
    crawlRevisitDue(revisit: string, frontier: string, seq: string, limit: number, hourMs: number, dayMs: number): Result<[number, number, number, number, number], Context>;
    crawlRevisitSet(revisit: string, meta: string, stats: string, member: string, fp: string, intervalMs: number, metaJson: string, counter: string): Result<number, Context>;
    crawlWorkerJoin(leases: string, workerId: string, leaseMs: number): Result<number, Context>;
    crawlWorkerBeat(leases: string, reaping: string, lastBeat: string, workerId: string, leaseMs: number, limit: number): Result<[number, string[]], Context>;
    crawlWorkerRegister(leases: string, reaping: string, sessions: string, workerId: string, field: string, value: string): Result<number, Context>;
    crawlWorkerClaim(leases: string, reaping: string, sessions: string, deadId: string, claimer: string, claimMs: number): Result<string[] | null, Context>;
    crawlWorkerReaped(leases: string, reaping: string, sessions: string, deadId: string, claimer: string): Result<number, Context>;
    crawlWorkerLeave(leases: string, reaping: string, sessions: string, workerId: string): Result<number, Context>;
    crawlExpireKeys(numKeys: number, ...keysThenMs: (string | number)[]): Result<number, Context>;
    crawlRetainKeys(numKeys: number, ...keysThenCountAndMs: (string | number)[]): Result<number, Context>;
    crawlHostRecord(hosts: string, totals: string, attention: string, host: string, record: string, score: number): Result<number, Context>;
  }
}

/** Registers the scripts (EVALSHA with automatic EVAL fallback, courtesy of ioredis). */
export function defineScripts(redis: RedisLike): void {
  for (const [name, def] of Object.entries(SCRIPTS)) {
    redis.defineCommand(name, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
}
