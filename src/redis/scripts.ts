// Lua scripts: each is atomic and touches keys of a single hash slot.
import type { Cluster, Redis, Result } from 'ioredis';

export type RedisLike = Redis | Cluster;

// ARGV triples: fingerprint, score base, member. A URL enters the frontier
// only if its fingerprint is new to the host's seen-set: mark-seen-and-enqueue
// in one step. The base (priority and depth, frontierScoreBase in
// src/redis/frontier.ts) plus the host's discovery counter is the score:
// integers below 2^53, exact in Lua's doubles and in the zset's.
const ENQUEUE_BODY = `
local added = 0
for i = FIRST, #ARGV, 3 do
  if redis.call('SADD', KEYS[1], ARGV[i]) == 1 then
    local n = redis.call('INCR', KEYS[3])
    redis.call('ZADD', KEYS[2], string.format('%.0f', tonumber(ARGV[i + 1]) + n), ARGV[i + 2])
    added = added + 1
  end
end
`;

export const SCRIPTS = {
  // KEYS: seen, frontier, seq, awake. Returns {added, awake, queued}: when
  // the host's workflow is awake, its next claim sees these URLs and nobody
  // needs to wake it. Reading the flag in the same script as the enqueue is
  // what makes skipping the wake safe (see crawlClaim).
  crawlEnqueue: {
    numberOfKeys: 4,
    lua: `${ENQUEUE_BODY.replace('FIRST', '1')}\nreturn {added, redis.call('EXISTS', KEYS[4]), redis.call('ZCARD', KEYS[2])}`,
  },
  // KEYS: frontier, current, awake, step. ARGV: stepId (or ''). Returns the
  // entry being worked on (sticky across retries) or nil. Finding the
  // frontier empty clears the awake flag atomically, so an enqueue either
  // lands before this claim (and is claimed) or after it (and sees the flag
  // cleared, and wakes the host). A step whose id is on the host's last
  // commit (crawlCommit) already finished: {result, remaining} instead.
  crawlClaim: {
    numberOfKeys: 4,
    lua: `
if ARGV[1] ~= '' then
  local done = redis.call('GET', KEYS[4])
  local prefix = ARGV[1] .. '\\n'
  if done and string.sub(done, 1, #prefix) == prefix then
    return {string.sub(done, #prefix + 1), redis.call('ZCARD', KEYS[1])}
  end
end
local cur = redis.call('GET', KEYS[2])
if cur and redis.call('ZSCORE', KEYS[1], cur) then return cur end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if #head == 0 then redis.call('DEL', KEYS[2], KEYS[3]) return false end
redis.call('SET', KEYS[2], head[1])
redis.call('SET', KEYS[3], '1')
return head[1]`,
  },
  // KEYS: seen, frontier, seq, current, stats, step. ARGV: member, statField,
  // bytes, stepId, step result, then enqueue triples. Removes the finished
  // entry, counts it once, enqueues its same-host links, and keeps the step's
  // result under its id, so a retry of a step whose commit went through
  // returns that result instead of claiming the next URL.
  crawlCommit: {
    numberOfKeys: 6,
    lua: `
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('DEL', KEYS[4]) end
if removed == 1 then
  redis.call('HINCRBY', KEYS[5], ARGV[2], 1)
  redis.call('HINCRBY', KEYS[5], 'bytes', tonumber(ARGV[3]))
end
-- Only the commit that finished the entry: a late attempt of an older step
-- (past its timeout) must not replace the record of the step after it.
if removed == 1 and ARGV[4] ~= '' then redis.call('SET', KEYS[6], ARGV[4] .. '\\n' .. ARGV[5], 'PX', 86400000) end
${ENQUEUE_BODY.replace('FIRST', '6')}
return {removed, added, redis.call('ZCARD', KEYS[2])}`,
  },
  // KEYS: clock. ARGV: owner, leaseMs, delayMs. Returns 0 when the caller
  // may send a request now (it then holds the clock for leaseMs), else ms to
  // wait. A retry of the same step (same owner) whose earlier attempt died
  // holding the lease may go once delayMs have passed since that attempt
  // started, so a crash neither breaks the spacing nor stalls the host for a
  // whole lease. Uses the Redis clock so all machines agree on "now".
  crawlClockAcquire: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'next', 'owner', 'since')
local nxt = tonumber(h[1] or '0')
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
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', now + lease), 'owner', ARGV[1], 'since', string.format('%.0f', now))
redis.call('PEXPIRE', KEYS[1], lease + 60000)
return 0`,
  },
  // KEYS: clock. ARGV: owner, delayMs. The next request may go out delayMs from now.
  crawlClockRelease: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = now + tonumber(ARGV[2])
-- Someone else's lease (ours expired meanwhile) is never shortened.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  nxt = math.max(nxt, tonumber(redis.call('HGET', KEYS[1], 'next') or '0'))
end
redis.call('HSET', KEYS[1], 'next', string.format('%.0f', nxt), 'owner', '')
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + 60000)
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
} as const;

type ScriptArgs = (string | number)[];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlEnqueue(seen: string, frontier: string, seq: string, awake: string, ...argv: ScriptArgs): Result<[number, number, number], Context>;
    crawlClaim(frontier: string, current: string, awake: string, step: string, stepId: string): Result<string | [string, number] | null, Context>;
    crawlCommit(seen: string, frontier: string, seq: string, current: string, stats: string, step: string, ...argv: ScriptArgs): Result<[number, number, number], Context>;
    crawlClockAcquire(clock: string, owner: string, leaseMs: number, delayMs: number): Result<number, Context>;
    crawlClockRelease(clock: string, owner: string, delayMs: number): Result<number, Context>;
    crawlBudgetReserve(budget: string, fp: string, max: number): Result<number, Context>;
  }
}

/** Registers the scripts (EVALSHA with automatic EVAL fallback, courtesy of ioredis). */
export function defineScripts(redis: RedisLike): void {
  for (const [name, def] of Object.entries(SCRIPTS)) {
    redis.defineCommand(name, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
}
