// The shared host clock against a real Redis: the rules every request to a
// host goes through, whichever worker or campaign sends it.
import { createRedis } from '../../src/redis/client';
import { HostClock } from '../../src/redis/host-clock';
import type { RedisLike } from '../../src/redis/scripts';

let redis: RedisLike;
let n = 0;
beforeAll(() => {
  redis = createRedis(process.env.REDIS_URL!);
});
afterAll(() => redis.disconnect());
const clock = () => new HostClock(redis, `clock-${process.pid}-${n++}.test`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a request holds the clock until it ends; the next one waits the delay from its end', async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 300)).toBe(0);
  // Held by a's request in flight: b is told to look again.
  expect(await c.acquire('b', 10_000, 300)).toBeGreaterThan(0);
  await c.release('a', 300);
  const wait = await c.acquire('b', 10_000, 300);
  expect(wait).toBeGreaterThan(250);
  // The release rounds its time up to the next millisecond, so no gap falls short.
  expect(wait).toBeLessThanOrEqual(301);
});

test('a caller with a longer delay of its own waits that long from the last request, whoever sent it', async () => {
  const c = clock();
  expect(await c.acquire('a', 10_000, 100)).toBe(0);
  await c.release('a', 100);
  await sleep(150);
  // a's own 100 ms have passed; b asks for 1 s between requests.
  expect(await c.acquire('a2', 10_000, 100)).toBe(0);
  await c.release('a2', 100);
  const wait = await c.acquire('b', 10_000, 1_000);
  expect(wait).toBeGreaterThan(800);
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
