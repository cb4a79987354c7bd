// A counting semaphore per IP address, shared by every worker process and
// every campaign: at most `limit` requests in flight to one address at once
// (politeness.maxInFlightPerAddress). Host clocks pace each host; they cannot
// see that ten thousand wildcard subdomains are one machine, so without this
// a page linking to them all makes the workers open thousands of requests to
// that machine at once.
//
// Each address is one sorted set, holder → lease expiry on the Redis clock.
// A holder that never releases (its worker died) loses its slot when its
// lease runs out: the lease is longer than a fetch can last (the total
// timeout), so a live request never loses its slot under it.
import { randomUUID } from 'node:crypto';
import type { Result } from 'ioredis';
import type { AddressGate, AddressSlotRelease } from '../http/http-types';
import { addressKeys } from './keys';
import type { RedisLike } from './scripts';

const SCRIPTS = {
  // KEYS: slots. ARGV: holder, limit, leaseMs. When the holder got a slot (or
  // holds one already): minus one minus the other holders' count (≤ -1);
  // else ms until the first lease in force runs out (an upper bound on the
  // wait: a release usually comes much sooner).
  crawlAddressAcquire: {
    numberOfKeys: 1,
    lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  local expiry = now + tonumber(ARGV[3])
  redis.call('ZADD', KEYS[1], expiry, ARGV[1])
  -- The key outlives its longest lease by nothing: an address nobody fetches leaves no key.
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return -redis.call('ZCARD', KEYS[1])
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(first[2]) - now)`,
  },
  // KEYS: slots. ARGV: holder. 1 when the holder had a slot.
  crawlAddressRelease: {
    numberOfKeys: 1,
    lua: `return redis.call('ZREM', KEYS[1], ARGV[1])`,
  },
} as const;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    crawlAddressAcquire(slots: string, holder: string, limit: number, leaseMs: number): Result<number, Context>;
    crawlAddressRelease(slots: string, holder: string): Result<number, Context>;
  }
}

export interface AddressSlotsOptions {
  /** Requests in flight to one address at once, over all workers. */
  limit: number;
  /** How long a slot is held at most: longer than any fetch (its total timeout), so only a dead holder's slot expires. */
  leaseMs: number;
  /** First wait between two tries while the address is full; it grows to maxPollMs. Default 25 ms. */
  minPollMs?: number;
  /** Default 500 ms. */
  maxPollMs?: number;
}

/** The HTTP client's gate (src/http/http-client.ts): a slot per request, given back when it is over. */
export class AddressSlots implements AddressGate {
  readonly limit: number;
  readonly #leaseMs: number;
  readonly #minPollMs: number;
  readonly #maxPollMs: number;

  constructor(
    private readonly redis: RedisLike,
    opts: AddressSlotsOptions,
  ) {
    if (!Number.isInteger(opts.limit) || opts.limit < 1) throw new RangeError(`address slot limit must be a whole number of at least 1 (got ${opts.limit})`);
    this.limit = opts.limit;
    this.#leaseMs = Math.max(1, Math.round(opts.leaseMs));
    this.#minPollMs = opts.minPollMs ?? 25;
    this.#maxPollMs = opts.maxPollMs ?? 500;
  }

  /**
   * Defined here rather than with the crawler's other scripts: only this
   * module calls them. At the first use, not in the constructor: a campaign
   * runtime builds its gate whether or not it ever fetches.
   */
  #defineScripts(): void {
    for (const [name, def] of Object.entries(SCRIPTS)) {
      if (typeof (this.redis as unknown as Record<string, unknown>)[name] !== 'function') this.redis.defineCommand(name, { numberOfKeys: def.numberOfKeys, lua: def.lua });
    }
  }

  /**
   * Waits for a slot at `address` and resolves with the function that gives
   * it back (call it once the response is over, whatever the outcome). While
   * the address is full it looks again after a short, growing, jittered
   * wait; an abort of `signal` ends the wait by rejecting with its reason.
   */
  async acquire(address: string, signal: AbortSignal): Promise<AddressSlotRelease> {
    this.#defineScripts();
    const key = addressKeys(address).slots;
    const holder = randomUUID();
    let pollMs = this.#minPollMs;
    for (;;) {
      signal.throwIfAborted();
      const wait = await this.redis.crawlAddressAcquire(key, holder, this.limit, this.#leaseMs);
      if (wait < 0) {
        // A slot won after the caller gave up is handed straight back.
        if (signal.aborted) {
          await this.redis.crawlAddressRelease(key, holder).catch(() => undefined);
          signal.throwIfAborted();
        }
        let released = false;
        const release = async () => {
          if (released) return;
          released = true;
          await this.redis.crawlAddressRelease(key, holder);
        };
        return Object.assign(release, { othersInFlight: -wait - 1 });
      }
      // Jittered so that waiters of several workers do not all come back at once.
      await abortableSleep(Math.min(wait, pollMs * (0.5 + Math.random())), signal);
      pollMs = Math.min(this.#maxPollMs, pollMs * 1.5);
    }
  }

  /** Requests in flight to `address` now (leases not yet expired). */
  async inFlight(address: string): Promise<number> {
    return this.redis.zcount(addressKeys(address).slots, '(' + String(await this.#redisNow()), '+inf');
  }

  async #redisNow(): Promise<number> {
    const [s, us] = await this.redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
