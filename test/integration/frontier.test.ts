// The frontier's wake protocol against real Redis: producers of new URLs
// skip waking a host only while its workflow is consuming the frontier.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { createRedis } from '../../src/redis/client';
import { Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { urlFingerprint } from '../../src/url/fingerprint';

const item = (url: string, depth = 1): EnqueueItem => ({ url, fp: urlFingerprint(url), depth, referrer: null });

describe('frontier wake protocol', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('reports a host asleep until a claim finds work, and asleep again once a claim finds it empty', async () => {
    const f = new Frontier(redis, `t-${randomUUID()}`, 'a.test');
    expect(await f.enqueue([item('http://a.test/1')])).toEqual({ added: 1, awake: false, queued: 1 });
    const first = await f.claim();
    expect(first?.entry.url).toBe('http://a.test/1');
    // Awake: the next claim will see this URL without a wake.
    expect(await f.enqueue([item('http://a.test/2')])).toEqual({ added: 1, awake: true, queued: 2 });
    await f.commit(first!.member, 'fetched', 0, []);
    const second = await f.claim();
    expect(second?.entry.url).toBe('http://a.test/2');
    await f.commit(second!.member, 'fetched', 0, []);
    expect(await f.claim()).toBeNull();
    // The empty claim cleared the flag: this producer must wake the host.
    const r = await f.enqueue([item('http://a.test/3')]);
    expect(r).toEqual({ added: 1, awake: false, queued: 1 });
    expect(Frontier.needsWake(r)).toBe(true);
    // Already-seen URLs add nothing, but a producer re-run after dying
    // between enqueue and wake must still be told to wake the host.
    const again = await f.enqueue([item('http://a.test/1'), item('http://a.test/3')]);
    expect(again).toEqual({ added: 0, awake: false, queued: 1 });
    expect(Frontier.needsWake(again)).toBe(true);
    const c = await f.claim();
    expect(Frontier.needsWake(await f.enqueue([item('http://a.test/1')]))).toBe(false);
    await f.commit(c!.member, 'fetched', 0, []);
    expect(await f.claim()).toBeNull();
    // Empty and asleep: nothing to wake it for.
    expect(Frontier.needsWake(await f.enqueue([item('http://a.test/1')]))).toBe(false);
  });

  it('keeps a claimed entry sticky until it is committed, and orders by depth then discovery', async () => {
    const f = new Frontier(redis, `t-${randomUUID()}`, 'b.test');
    await f.enqueue([item('http://b.test/deep', 2), item('http://b.test/x', 1), item('http://b.test/y', 1)]);
    const c1 = await f.claim();
    expect(c1?.entry.url).toBe('http://b.test/x');
    expect((await f.claim())?.member).toBe(c1!.member);
    await f.commit(c1!.member, 'fetched', 10, [item('http://b.test/z', 1)]);
    const order: string[] = [];
    for (let c = await f.claim(); c; c = await f.claim()) {
      order.push(c.entry.url);
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(order).toEqual(['http://b.test/y', 'http://b.test/z', 'http://b.test/deep']);
    expect(await f.stats()).toMatchObject({ fetched: 4, bytes: 10 });
  });
});
