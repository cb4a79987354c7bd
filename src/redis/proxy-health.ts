// Which of a campaign's proxies are set aside, shared by all its workers:
// one sorted set under the campaign's keys, proxy id → until when (Redis
// clock, so workers whose clocks disagree agree on it). It holds proxy ids
// only (no credentials), at most one member per proxy of the list, and it
// expires by itself once the last set-aside is over; the campaign's
// retention and purge drop it with the other keys.
import type { Result } from 'ioredis';
import type { ProxyHealth } from '../http/proxies';
import { campaignKeys } from './keys';
import type { RedisLike } from './scripts';

const SCRIPTS = {
  // KEYS: down. ARGV: id, ms. Sets the id aside until now + ms (never shortens one).
  crawlProxyDown: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local untilMs = now + tonumber(ARGV[2])
local current = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not current or tonumber(current) < untilMs then redis.call('ZADD', KEYS[1], untilMs, ARGV[1]) end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`,
  },
  // KEYS: down. The ids set aside now.
  crawlProxiesDown: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')`,
  },
} as const;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlProxyDown(down: string, id: string, ms: number): Result<number, Context>;
    crawlProxiesDown(down: string): Result<string[], Context>;
  }
}

/** How long a worker trusts what it read: every fetch asks which proxies are down, most of them without a round trip. */
const READ_CACHE_MS = 1_000;

export class RedisProxyHealth implements ProxyHealth {
  readonly #key: string;
  #cached: { at: number; ids: Set<string> } | null = null;

  constructor(
    private readonly redis: RedisLike,
    campaignKey: string,
  ) {
    this.#key = campaignKeys(campaignKey).proxiesDown;
  }

  #defineScripts(): void {
    for (const [name, def] of Object.entries(SCRIPTS)) {
      if (typeof (this.redis as unknown as Record<string, unknown>)[name] !== 'function') this.redis.defineCommand(name, { numberOfKeys: def.numberOfKeys, lua: def.lua });
    }
  }

  async setAside(): Promise<ReadonlySet<string>> {
    if (this.#cached && Date.now() - this.#cached.at < READ_CACHE_MS) return this.#cached.ids;
    this.#defineScripts();
    try {
      const ids = new Set(await this.redis.crawlProxiesDown(this.#key));
      this.#cached = { at: Date.now(), ids };
      return ids;
    } catch (err) {
      // Redis away for a moment: what was known last is better than sending hosts back to a dead proxy.
      if (this.#cached) return this.#cached.ids;
      throw err;
    }
  }

  async markFailed(id: string, ms: number): Promise<void> {
    // This worker stops using it at once, whatever Redis says.
    if (this.#cached) this.#cached.ids.add(id);
    this.#defineScripts();
    await this.redis.crawlProxyDown(this.#key, id, Math.max(1, Math.round(ms)));
  }
}
