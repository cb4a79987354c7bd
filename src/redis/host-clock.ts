// One politeness clock per host, shared by every worker and every campaign:
// a request may only start when the clock allows it, and each request holds
// the clock (a lease) until it ends and stamps the next allowed time.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { SessionSupersededError } from './frontier';
import { sharedHostKeys } from './keys';
import type { RedisLike } from './scripts';

/** Known free times kept per connection at most: past it the expired ones go (a clock's entry lasts one delay). */
const MAX_KNOWN = 10_000;

/**
 * Per Redis connection, clock key → performance.now() before which the clock's last release on
 * this worker said no request may go. Shared by every HostClock of the key on the worker, so a
 * host's session that follows its robots.txt warm-up (another HostClock of the same key) waits
 * out the warm-up's delay first and takes the clock with one acquire instead of two (issue 27).
 */
const knownFree = new WeakMap<object, Map<string, number>>();

export class HostClock {
  private readonly key: string;
  private readonly fenceKey: string;
  private readonly known: Map<string, number>;

  /**
   * `holder`: which attempt of an owner this is (a session's attempt token).
   * Attempts of one owner may take its lease over after the delay (a retried
   * session whose first attempt died); a holder's late release or abandon
   * then leaves the lease of the attempt that holds it now alone. `fence`:
   * the attempt's fencing number (src/redis/frontier.ts takeOver); once the
   * clock has seen a higher one of the owner, this attempt may neither take
   * the clock nor send under it. 0: unfenced (robots.txt, other hosts of a
   * rendered page), as every caller was before fencing.
   */
  constructor(
    private readonly redis: RedisLike,
    /** The clock's name: a host key, or a politeness key (src/politeness/politeness-key.ts). */
    readonly name: string,
    private readonly holder = '',
    private readonly fence = 0,
  ) {
    const keys = sharedHostKeys(name);
    this.key = keys.clock;
    this.fenceKey = keys.clockFence;
    let known = knownFree.get(redis);
    if (!known) knownFree.set(redis, (known = new Map()));
    this.known = known;
  }

  /**
   * 0 when the caller may send a request now (it then holds the clock for leaseMs), -1 when a
   * newer attempt of the owner has been seen (this one is superseded), else ms to wait.
   */
  acquire(owner: string, leaseMs: number, delayMs: number): Promise<number> {
    return this.redis.crawlClockAcquire(this.key, this.fenceKey, owner, Math.max(1, Math.round(leaseMs)), Math.max(0, Math.round(delayMs)), this.holder, this.fence);
  }

  /**
   * Just before the request goes out: true when the clock is still this holder's and no newer
   * attempt of the owner has been seen; its lease then runs `leaseMs` from now, and another
   * attempt of the owner may take the clock over only a delay after this moment. False: the
   * request must not go (nothing was changed).
   */
  async stamp(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.redis.crawlClockStamp(this.key, this.fenceKey, owner, this.holder, this.fence, Math.max(1, Math.round(leaseMs)))) === 1;
  }

  /**
   * Makes this attempt's fencing number known to the clock (a session that just took its host
   * over): older attempts of the owner are refused from now on. Returns the newest number the clock
   * has seen of the owner, higher than this one's when this attempt is not the newest.
   */
  register(owner: string): Promise<number> {
    return this.redis.crawlClockFence(this.fenceKey, owner, this.fence);
  }

  /**
   * The request is over: the next one may start delayMs after the host's last
   * request ended, `idleMs` ago (a rendered page's last request to its host;
   * 0: now, the request just ended).
   */
  async release(owner: string, delayMs: number, idleMs = 0): Promise<void> {
    const wait = await this.redis.crawlClockRelease(this.key, owner, Math.max(0, Math.round(delayMs)), this.holder, Math.max(0, Math.floor(idleMs)));
    // +1: the release rounds the Redis clock up and the acquire rounds it down.
    if (wait > 0) this.remember(performance.now() + wait + 1);
    else this.known.delete(this.key);
  }

  private remember(freeAt: number): void {
    if (this.known.size >= MAX_KNOWN) {
      const now = performance.now();
      for (const [k, at] of this.known) if (at <= now) this.known.delete(k);
      // All still running (a burst of releases): the oldest go; a wait not known is only asked for again.
      for (const k of this.known.keys()) {
        if (this.known.size < MAX_KNOWN) break;
        this.known.delete(k);
      }
    }
    this.known.set(this.key, freeAt);
  }

  /**
   * How long acquire() would make the caller wait at least, from what this
   * clock's last release answered: the clock's next allowed time only ever
   * moves later until someone holds it again, so a session that waits this
   * out first takes the clock with one acquire instead of two.
   */
  knownWait(): number {
    const at = this.known.get(this.key);
    if (at === undefined) return 0;
    const wait = Math.ceil(at - performance.now());
    if (wait > 0) return wait;
    this.known.delete(this.key);
    return 0;
  }

  /** The clock was taken but no request went out: free it without counting a request. */
  async abandon(owner: string): Promise<void> {
    await this.redis.crawlClockAbandon(this.key, owner, this.holder);
  }
}

/**
 * Takes the clock, waiting here for any gap shorter than `maxWaitMs` (the
 * durable-sleep threshold): 0 once held, else the wait still ahead, which the
 * caller hands to its workflow as a durable sleep. `onWait` sees each wait
 * slept here (the politeness-wait metric). Throws SessionSupersededError when
 * a newer attempt of the owner has been seen (acquire's -1).
 */
export async function acquireWithin(
  clock: HostClock,
  owner: string,
  leaseMs: number,
  delayMs: number,
  maxWaitMs: number,
  signal: AbortSignal,
  onWait?: (ms: number) => void,
): Promise<number> {
  const known = clock.knownWait();
  if (known > 0 && known < maxWaitMs) {
    onWait?.(known);
    await sleep(known, undefined, { signal });
  }
  for (;;) {
    const wait = await clock.acquire(owner, leaseMs, delayMs);
    // Before the wait check: -1 is no wait, and slept as one it would spin.
    if (wait < 0) throw new SessionSupersededError(clock.name);
    if (wait === 0 || wait >= maxWaitMs) return wait;
    onWait?.(wait);
    await sleep(wait, undefined, { signal });
  }
}
