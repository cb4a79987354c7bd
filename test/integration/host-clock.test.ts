// The shared host clock against a real Redis: the rules every request to a
// host goes through, whichever worker or campaign sends it.
import { createRedis } from '../../src/redis/client';
import { acquireWithin, HostClock } from '../../src/redis/host-clock';
import { sharedHostKeys } from '../../src/redis/keys';
import type { RedisLike } from '../../src/redis/scripts';

let redis: RedisLike;
let n = 0;
beforeAll(() => {
  redis = createRedis(process.env.REDIS_URL!);
});
afterAll(() => redis.disconnect());
const clock = () => new HostClock(redis, `clock-${process.pid}-${n++}.test`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * What is left of a `delayMs` quiet time begun at `from` (this process's clock), at the least: a
 * wait must be no shorter, however long a busy machine stalled this process between the calls.
 */
const leftOf = (delayMs: number, from: number) => delayMs - (Date.now() - from) - 1;

test('a request holds the clock until it ends; the next one waits the delay from its end', async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 300)).toBe(0);
  // Held by a's request in flight: b is told to look again.
  expect(await c.acquire('b', 10_000, 300)).toBeGreaterThan(0);
  const releasing = Date.now();
  await c.release('a', 300);
  const wait = await c.acquire('b', 10_000, 300);
  // The delay counts from the release: what is left of it is 300 ms less the time since, however
  // long this process took between the calls (a busy machine stalls it for a hundred ms or more).
  expect(wait).toBeGreaterThanOrEqual(300 - (Date.now() - releasing) - 1);
  // The release rounds its time up to the next millisecond, so no gap falls short.
  expect(wait).toBeLessThanOrEqual(301);
});

test('a release says how long the host stays quiet: waiting that out first, the next request takes the clock with one acquire', async () => {
  const c = clock();
  let asked = 0;
  const acquire = c.acquire.bind(c);
  c.acquire = (...a) => {
    asked++;
    return acquire(...a);
  };
  // A delay of a second: the wait below must still be there after whatever this process stalls for.
  expect(await acquireWithin(c, 'a', 10_000, 1_000, 60_000, new AbortController().signal)).toBe(0);
  const releasing = Date.now();
  await c.release('a', 1_000);
  expect(c.knownWait()).toBeGreaterThanOrEqual(leftOf(1_000, releasing));
  expect(c.knownWait()).toBeLessThanOrEqual(1_002);
  const waits: number[] = [];
  asked = 0;
  expect(await acquireWithin(c, 'a', 10_000, 1_000, 60_000, new AbortController().signal, (ms) => waits.push(ms))).toBe(0);
  expect(asked).toBe(1);
  // The wait slept is still reported (the politeness-wait metric).
  expect(waits).toHaveLength(1);
  expect(waits[0]).toBeGreaterThan(0);
  // A wait past the caller's limit is not slept here: the acquire says it, for a durable sleep.
  const releasingLong = Date.now();
  await c.release('a', 5_000);
  expect(await acquireWithin(c, 'a', 10_000, 5_000, 1_000, new AbortController().signal)).toBeGreaterThanOrEqual(leftOf(5_000, releasingLong));
});

test("a release's wait is known to the worker's other clocks of the host: a session after its robots.txt warm-up takes the clock with one acquire", async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const warmUp = new HostClock(redis, host);
  expect(await warmUp.acquire('robots-warm-up', 10_000, 300)).toBe(0);
  const releasing = Date.now();
  await warmUp.release('robots-warm-up', 300);
  const session = new HostClock(redis, host, 'attempt-1');
  expect(session.knownWait()).toBeGreaterThanOrEqual(leftOf(300, releasing));
  let asked = 0;
  const acquire = session.acquire.bind(session);
  session.acquire = (...a) => {
    asked++;
    return acquire(...a);
  };
  expect(await acquireWithin(session, 'session', 10_000, 300, 60_000, new AbortController().signal)).toBe(0);
  expect(asked).toBe(1);
  // Another host's clock knows nothing of it.
  expect(clock().knownWait()).toBe(0);
});

test("a late release while someone else holds the clock announces no wait: their lease's end is not known", async () => {
  const c = clock();
  expect(await c.acquire('a', 200, 100)).toBe(0);
  await sleep(250);
  expect(await c.acquire('b', 10_000, 100)).toBe(0);
  await c.release('a', 100);
  expect(c.knownWait()).toBe(0);
});

test('a caller with a longer delay of its own waits that long from the last request, whoever sent it', async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 100)).toBe(0);
  await c.release('a', 100);
  await sleep(150);
  // a's own 100 ms have passed; b asks for 1 s between requests.
  expect(await c.acquire('a2', 10_000, 100)).toBe(0);
  const releasing = Date.now();
  await c.release('a2', 100);
  const wait = await c.acquire('b', 10_000, 1_000);
  expect(wait).toBeGreaterThanOrEqual(leftOf(1_000, releasing));
});

test("a release after the host was already quiet (a render's last request ended earlier) counts the delay from that request, never from later than now", async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 1_000)).toBe(0);
  // The render's last request to the host ended 700 ms ago: 300 ms of the second are left, for the same caller and for another.
  const releasing = Date.now();
  await c.release('a', 1_000, 700);
  const wait = await c.acquire('a', 10_000, 1_000);
  expect(wait).toBeGreaterThan(0);
  expect(wait).toBeLessThanOrEqual(301);
  expect(await c.acquire('b', 10_000, 1_000)).toBeGreaterThanOrEqual(leftOf(300, releasing));
  // Quiet longer than the delay: free at once; a caller with a longer delay of its own still counts it from that request.
  await sleep(wait + 5);
  expect(await c.acquire('a', 10_000, 1_000)).toBe(0);
  await c.release('a', 1_000, 5_000);
  // (Free now, to the millisecond the release rounds its time up by.)
  await sleep(2);
  expect(await c.acquire('b', 10_000, 1_000)).toBe(0);
  await c.release('b', 1_000);
  const c2 = clock();
  expect(await c2.acquire('a', 10_000, 1_000)).toBe(0);
  const at = Date.now();
  await c2.release('a', 1_000, 400);
  expect(await c2.acquire('slow', 10_000, 3_000)).toBeGreaterThanOrEqual(leftOf(2_600, at));
});

test('a late release (its lease ran out) neither clears nor shortens the lease of the request that holds the clock now', async () => {
  const c = clock();
  expect(await c.acquire('a', 200, 100)).toBe(0);
  await sleep(250);
  // a's lease expired: b takes the clock for a long request.
  expect(await c.acquire('b', 10_000, 100)).toBe(0);
  // a's request ends late.
  await c.release('a', 100);
  // b still holds the clock: c may not go.
  expect(await c.acquire('c', 10_000, 100)).toBeGreaterThan(0);
  await c.release('b', 100);
  expect(await c.acquire('c', 10_000, 100)).toBeGreaterThan(0);
  await sleep(120);
  expect(await c.acquire('c', 10_000, 100)).toBe(0);
});

test('a lease abandoned unused frees the clock at once and keeps the end of the real last request: the next caller still waits its delay from it', async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 400)).toBe(0);
  const releasing = Date.now();
  await c.release('a', 0);
  await sleep(50);
  // A caller with no delay of its own takes the clock, sends nothing and gives it back.
  expect(await c.acquire('robots', 10_000, 0)).toBe(0);
  await c.abandon('robots');
  // Free again at once for a caller without a delay…
  expect(await c.acquire('b', 10_000, 0)).toBe(0);
  await c.abandon('b');
  // …while a caller with a 400 ms delay waits 400 ms from a's request, not from the abandoned lease.
  const wait = await c.acquire('d', 10_000, 400);
  expect(wait).toBeGreaterThanOrEqual(leftOf(400, releasing));
  expect(wait).toBeLessThanOrEqual(351);
  // Abandoning someone else's lease changes nothing.
  await sleep(wait);
  expect(await c.acquire('d', 10_000, 400)).toBe(0);
  await c.abandon('not-the-owner');
  expect(await c.acquire('e', 10_000, 0)).toBeGreaterThan(0);
});

test('a late second release after a long Retry-After keeps the clock as long as that wait: the key does not expire with a minute left', async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const c = new HostClock(redis, host);
  expect(await c.acquire('a', 10_000, 100)).toBe(0);
  // The server said Retry-After: one hour.
  await c.release('a', 3_600_000);
  // The same request's release again, late (a retried attempt that had been given up on).
  await c.release('a', 0);
  expect(await c.acquire('b', 10_000, 100)).toBeGreaterThan(3_500_000);
  expect(await redis.pttl(sharedHostKeys(host).clock)).toBeGreaterThan(3_600_000);
});

test("attempts of one owner: a superseded attempt's late release or abandon leaves the lease of the attempt that holds it now", async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const first = new HostClock(redis, host, 'attempt-1');
  const second = new HostClock(redis, host, 'attempt-2');
  const otherCampaign = new HostClock(redis, host);
  expect(await first.acquire('c|h', 10_000, 100)).toBe(0);
  // The first attempt stalled; its retry (same owner) takes the clock over once the delay has passed.
  await sleep(120);
  expect(await second.acquire('c|h', 10_000, 100)).toBe(0);
  // The stalled attempt wakes up and ends late, or gives its lease back: the second one's request is still in flight.
  await first.release('c|h', 100);
  await first.abandon('c|h');
  await sleep(150);
  expect(await otherCampaign.acquire('other|h', 10_000, 100)).toBeGreaterThan(0);
  // The holder's own release frees it.
  await second.release('c|h', 100);
  await sleep(120);
  expect(await otherCampaign.acquire('other|h', 10_000, 100)).toBe(0);
});

test('fenced attempts of one owner: once the clock has seen a newer attempt, the older one may neither send under its lease nor take the clock again', async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const first = new HostClock(redis, host, 'attempt-1', 1);
  const second = new HostClock(redis, host, 'attempt-2', 2);
  expect(await first.register('c|h')).toBe(1);
  expect(await first.acquire('c|h', 10_000, 100)).toBe(0);
  // The first attempt waits (for an address slot) with the clock; the second took the host over and says so.
  expect(await second.register('c|h')).toBe(2);
  expect(await first.stamp('c|h', 10_000)).toBe(false);
  // Its lease stands until the delay has passed since it was granted (nothing went out): then the second takes it.
  await sleep(120);
  expect(await second.acquire('c|h', 10_000, 100)).toBe(0);
  await second.release('c|h', 100);
  await sleep(120);
  // Past the delay, free: the first attempt is still refused, whatever it waits.
  expect(await first.acquire('c|h', 10_000, 100)).toBe(-1);
  await expect(acquireWithin(first, 'c|h', 10_000, 100, 5_000, new AbortController().signal)).rejects.toMatchObject({ code: 'SESSION_SUPERSEDED' });
  // A late registration of an older number changes nothing.
  expect(await first.register('c|h')).toBe(2);
  // Callers without a fencing number (robots.txt, another release's workers) and other owners go on as before.
  expect(await new HostClock(redis, host, 'older-release').acquire('c|h', 10_000, 100)).toBe(0);
});

test('the grant records a newer attempt too: an attempt that took the clock over leaves the one before it refused', async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const first = new HostClock(redis, host, 'attempt-1', 1);
  const second = new HostClock(redis, host, 'attempt-2', 2);
  expect(await first.acquire('c|h', 10_000, 100)).toBe(0);
  await sleep(120);
  expect(await second.acquire('c|h', 10_000, 100)).toBe(0);
  await second.release('c|h', 100);
  await sleep(120);
  // Before fencing the first attempt got the clock back here, its delay passed.
  expect(await first.acquire('c|h', 10_000, 100)).toBe(-1);
  expect(await redis.hget(sharedHostKeys(host).clockFence, 'c|h')).toBe('2');
});

test("another attempt of the owner takes the clock over a delay after the holder's request went out, not after its grant", async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const first = new HostClock(redis, host, 'attempt-1', 1);
  const second = new HostClock(redis, host, 'attempt-2', 2);
  expect(await first.acquire('c|h', 10_000, 1_000)).toBe(0);
  // The first attempt's request waits for an address slot longer than the delay, then goes out.
  await sleep(1_200);
  expect(await first.stamp('c|h', 10_000)).toBe(true);
  // The second attempt (its number not yet known to the clock) must wait a delay from the request, not from the grant.
  const wait = await second.acquire('c|h', 10_000, 1_000);
  expect(wait).toBeGreaterThan(800);
  expect(wait).toBeLessThanOrEqual(1_000);
  await sleep(wait);
  expect(await second.acquire('c|h', 10_000, 1_000)).toBe(0);
  // Its lease now: the first attempt's stamp is refused (another holder).
  expect(await first.stamp('c|h', 10_000)).toBe(false);
});

test('after a Redis restart a clock it did not grant itself is trusted only once the server has been up for the delay', async () => {
  const info = await redis.info('server');
  const upMs = Number(/uptime_in_seconds:(\d+)/.exec(info)![1]) * 1000;
  const runId = /run_id:(\w+)/.exec(info)![1];
  // A delay longer than this server has been up: its stamps could have been lost in a crash.
  const delay = upMs + 60_000;
  const c = new HostClock(redis, `clock-${process.pid}-${n++}.test`);
  const key = `crawl:clock:{clock-${process.pid}-${n - 1}.test}`;
  // No clock at all (first use, expired, or lost with the crash): wait until the server has been up for the delay.
  const wait = await c.acquire('a', 10_000, delay);
  expect(wait).toBeGreaterThan(delay - upMs - 2_000);
  expect(wait).toBeLessThanOrEqual(delay - upMs);
  // A clock last granted by an earlier server: a delay from now.
  await redis.hset(key, 'epoch', 'an-earlier-server', 'last', '0', 'owner', '');
  expect(await c.acquire('a', 10_000, delay)).toBe(delay);
  // Granted by this server: its stamps count as they are (none due here).
  await redis.hset(key, 'epoch', runId, 'next', '0', 'last', '0');
  expect(await c.acquire('a', 10_000, delay)).toBe(0);
  expect(await redis.hget(key, 'epoch')).toBe(runId);
  // Short delays, the server up longer than them: nothing changes.
  const d = clock();
  expect(await d.acquire('a', 10_000, 300)).toBe(0);
});

test("an acquire without a delay leaves the clock's run ID as it was: a caller with a delay trusts it no sooner than before", async () => {
  const host = `clock-${process.pid}-${n++}.test`;
  const key = sharedHostKeys(host).clock;
  const c = new HostClock(redis, host);
  await redis.hset(key, 'epoch', 'an-earlier-server', 'next', '0', 'last', '0', 'owner', '');
  await redis.pexpire(key, 60_000);
  // No spacing to protect: granted at once, and the server is not asked who it is (INFO).
  expect(await c.acquire('a', 10_000, 0)).toBe(0);
  expect(await redis.hget(key, 'epoch')).toBe('an-earlier-server');
  await c.release('a', 0);
  // A caller with a delay still sees a clock another server granted: a delay from now.
  expect(await c.acquire('b', 10_000, 500)).toBe(500);
});

test('after a failover the promoted replica, up for long, trusts a clock the old master granted only a delay after it first sees it', async () => {
  // A replica's uptime is its own: make sure this server has been up longer than the delay, as a promoted replica would be.
  const upSeconds = async () => Number(/uptime_in_seconds:(\d+)/.exec(await redis.info('server'))![1]);
  while ((await upSeconds()) < 2) await sleep(200);
  const runId = /run_id:(\w+)/.exec(await redis.info('server'))![1];
  const delay = 1_000;
  const host = `clock-${process.pid}-${n++}.test`;
  const key = sharedHostKeys(host).clock;
  const c = new HostClock(redis, host);
  // What the replica holds of the clock: the old master's run ID, and stamps
  // that say the host is free (the master's last grant, after them, never
  // reached the replica).
  await redis.hset(key, 'epoch', 'the-old-master', 'next', '0', 'last', '0', 'owner', '');
  await redis.pexpire(key, 60_000);
  expect(await c.acquire('a', 10_000, delay)).toBe(delay);
  // Asked again at once, by anyone (the same owner too): still not.
  expect(await c.acquire('b', 10_000, delay)).toBeGreaterThan(0);
  expect(await c.acquire('a', 10_000, delay)).toBeGreaterThan(0);
  expect(await redis.hget(key, 'epoch')).toBe(runId);
  // A delay after this server first saw the clock, it is trusted again, as this server's clock.
  await sleep(delay + 50);
  expect(await c.acquire('b', 10_000, delay)).toBe(0);
  expect(await redis.hget(key, 'epoch')).toBe(runId);
});
