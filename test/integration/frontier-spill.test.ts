// A frontier that spills (src/redis/frontier-spill.ts) against real Redis and
// a real folder store: the tail goes to segments past the bound and comes
// back in score order as the host drains, the counts include what is in
// segments, and the crash windows (a spill whose script never ran, a refill
// run twice, a spill racing a claim) lose and double nothing.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { hostsWithFrontier } from '../../activities/redis-recovery';
import { createRedis } from '../../src/redis/client';
import { Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { decodeSegment, FrontierSpillError, refillSegment, registerSegment, restoreSegment, segmentKey, type SpillOptions } from '../../src/redis/frontier-spill';
import { hostKeys } from '../../src/redis/keys';
import { FolderObjectStore } from '../../src/storage/folder-object-store';
import type { ObjectStore } from '../../src/storage/object-store';
import { urlFingerprint } from '../../src/url/fingerprint';

// Thousands of URLs through Lua and a folder store: seconds on a loaded machine (Jest's 5 s ran out at load 13).
jest.setTimeout(60_000);

const HOST = 's.test';
const item = (n: number, depth = 1, priority = 0): EnqueueItem => {
  const url = `http://${HOST}/p/${n}`;
  return { url, fp: urlFingerprint(url), depth, referrer: null, priority };
};

/** Every segment object of the store (any campaign). */
async function segments(store: ObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list('frontier/')) out.push(o.key);
  return out;
}

/** Claims and commits until the frontier is empty: the URLs in claim order, and each commit's `remaining`. */
async function drain(f: Frontier): Promise<{ urls: string[]; remaining: number[] }> {
  const urls: string[] = [];
  const remaining: number[] = [];
  for (let c = await f.claim(); c; c = await f.claim()) {
    urls.push(c.entry.url);
    remaining.push((await f.commit(c.member, 'fetched', 0, [])).remaining);
  }
  return { urls, remaining };
}

/** The claim order the frontier promises: priority (higher first), then depth, then discovery (the order given). */
const expectedOrder = (items: EnqueueItem[]): string[] =>
  items
    .map((it, i) => ({ it, i }))
    .sort((a, b) => (b.it.priority ?? 0) - (a.it.priority ?? 0) || a.it.depth - b.it.depth || a.i - b.i)
    .map(({ it }) => it.url);

describe('a frontier that spills', () => {
  let redis: Redis;
  let dir: string;
  let store: FolderObjectStore;
  let spill: SpillOptions;
  const errors: unknown[] = [];
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spill-'));
    store = new FolderObjectStore(dir);
    errors.length = 0;
    // Objects read back are kept 3 s in production (a Redis crash's lost writes); 100 ms here.
    spill = { above: 20, store, onError: (err) => errors.push(err), readBackGraceMs: 100 };
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterAll(async () => {
    await redis.quit();
  });

  it('keeps the head in Redis, the tail in segments, counts both, and gives every URL back once in priority, depth, discovery order', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    const f = new Frontier(redis, campaign, HOST, spill);
    // 200 URLs as links arrive: batches of ten, of mixed priority and depth.
    const items = Array.from({ length: 200 }, (_, n) => item(n, 1 + ((n * 7) % 5), n % 13 === 0 ? 2 : n % 17 === 0 ? -1 : 0));
    for (let i = 0; i < items.length; i += 10) {
      const r = await f.enqueue(items.slice(i, i + 10));
      expect(r.added).toBe(10);
      // Queued counts the segments' entries too.
      expect(r.queued).toBe(i + 10);
      expect(await redis.zcard(k.frontier)).toBeLessThanOrEqual(20);
    }
    expect(errors).toEqual([]);
    const held = await redis.zcard(k.frontier);
    const objects = await segments(store);
    expect(objects.length).toBeGreaterThan(3);
    expect(await redis.zcard(k.spill)).toBe(objects.length);
    expect((await f.stats()).spilled).toBe(200 - held);
    expect(await f.size()).toBe(200);
    expect((await f.statsAndSize()).size).toBe(200);

    // The page bound counts spilled pages as queued: a host allowed 200 pages with 200 queued takes no more.
    expect((await f.enqueue([item(1000)], { maxPagesPerHost: 200 })).added).toBe(0);
    expect((await f.enqueue([item(1000)], { maxPagesPerHost: 201 })).added).toBe(1);
    items.push(item(1000));

    const { urls, remaining } = await drain(f);
    expect(urls).toEqual(expectedOrder(items));
    // Each commit's remaining counts the spilled entries: never 0 before the last one.
    expect(remaining).toEqual(items.map((_, i) => items.length - 1 - i));
    expect(errors).toEqual([]);
    // Every segment was read back and removed.
    expect(await redis.exists(k.spill)).toBe(0);
    expect((await f.stats()).spilled ?? 0).toBe(0);
    expect(await segments(store)).toEqual([]);
    // Drained: the empty claim cleared the awake flag, so a producer wakes the host again.
    expect(await redis.exists(k.awake)).toBe(0);
  });

  it('claims a shallower link enqueued after a spill before the deeper spilled ones', async () => {
    const campaign = `t-${randomUUID()}`;
    const f = new Frontier(redis, campaign, HOST, spill);
    await f.enqueue(Array.from({ length: 100 }, (_, n) => item(n, 3)));
    expect(await redis.zcard(hostKeys(campaign, HOST).spill)).toBeGreaterThan(0);
    // Past the head in Redis, into the refilled segments.
    const first: string[] = [];
    for (let i = 0; i < 15; i++) {
      const c = (await f.claim())!;
      first.push(c.entry.url);
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(first).toEqual(Array.from({ length: 15 }, (_, n) => `http://${HOST}/p/${n}`));
    await f.enqueue([item(500, 5), item(501, 1)]);
    const { urls } = await drain(f);
    expect(urls[0]).toBe(`http://${HOST}/p/501`);
    expect(urls.slice(1, -1)).toEqual(Array.from({ length: 85 }, (_, n) => `http://${HOST}/p/${n + 15}`));
    expect(urls[urls.length - 1]).toBe(`http://${HOST}/p/500`);
  });

  it('a spill whose script never ran (the worker died after the upload) loses and doubles nothing', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    const f = new Frontier(redis, campaign, HOST, spill);
    // The upload happens; the call that would move the entries never reaches Redis.
    const dropped = jest.spyOn(redis, 'crawlSpill').mockImplementationOnce(() => Promise.reject(new Error('worker killed')));
    const items = Array.from({ length: 30 }, (_, n) => item(n));
    await f.enqueue(items);
    expect(dropped).toHaveBeenCalledTimes(1);
    dropped.mockRestore();
    expect(errors).toHaveLength(1);
    // Nothing moved: all 30 still in Redis, one orphan object, no segment registered; the lock was let go.
    expect(await redis.zcard(k.frontier)).toBe(30);
    expect(await segments(store)).toHaveLength(1);
    expect(await redis.exists(k.spill, k.spillLock)).toBe(0);
    expect(await f.size()).toBe(30);
    // The next enqueue spills for real; the drain gives each URL once.
    items.push(item(30));
    await f.enqueue([item(30)]);
    expect(await redis.zcard(k.spill)).toBe(1);
    expect((await drain(f)).urls).toEqual(items.map((it) => it.url));
  });

  it('a refill run twice for one segment, or killed before its script, adds nothing twice and loses nothing', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    const f = new Frontier(redis, campaign, HOST, spill);
    const items = Array.from({ length: 30 }, (_, n) => item(n));
    await f.enqueue(items);
    const [name] = await redis.zrange(k.spill, 0, 0);
    const pairs = decodeSegment(fs.readFileSync(path.join(dir, segmentKey(campaign, HOST, name))));
    const held = await redis.zcard(k.frontier);
    expect(pairs.length + held).toBe(30);
    // A worker read the segment and died before its script: still registered, nothing changed.
    expect(await f.size()).toBe(30);
    // Its script run twice (a retried call): the second changes nothing.
    expect(await restoreSegment(redis, k, name, pairs)).toBe(1);
    expect(await restoreSegment(redis, k, name, pairs)).toBe(0);
    expect(await redis.zcard(k.frontier)).toBe(30);
    expect((await f.stats()).spilled).toBe(0);
    // Its object is still there (removed only once the read-back is surely on disk): a refill of the unregistered segment does nothing.
    await refillSegment(redis, k, campaign, HOST, store, name);
    expect(await redis.zcard(k.frontier)).toBe(30);
    expect((await drain(f)).urls).toEqual(items.map((it) => it.url));
    // Drained: the objects of the segments read back are gone.
    expect(await segments(store)).toEqual([]);
    expect(await redis.exists(k.spillDone)).toBe(0);
  });

  it('a refill that Redis loses (its last writes lost in a crash) finds the segment object still there', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    const f = new Frontier(redis, campaign, HOST, spill);
    const items = Array.from({ length: 30 }, (_, n) => item(n));
    await f.enqueue(items);
    const before = { spill: await redis.zrange(k.spill, 0, -1, 'WITHSCORES'), spilled: await redis.hget(k.stats, 'spilled') };
    const [name, low] = before.spill;
    const held = await redis.zrange(k.frontier, 0, -1);
    // The head drains and the segment is read back by a claim.
    for (let i = 0; i < 11; i++) {
      const c = (await f.claim())!;
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(await redis.exists(k.spill)).toBe(0);
    expect(await segments(store)).toEqual([segmentKey(campaign, HOST, name)]);
    // Redis comes back without the refill and what followed it (the claim and commit of p/10, the
    // segment's first entry, lost too: fetched again, as any lost commit is): the segment registered,
    // its entries not in the sorted set.
    const refilled = (await redis.zrange(k.frontier, 0, -1)).filter((m) => !held.includes(m));
    await redis.zrem(k.frontier, ...refilled);
    await redis.zadd(k.spill, low, name);
    await redis.hset(k.stats, 'spilled', before.spilled!);
    await redis.del(k.spillDone);
    // Read back again from the object: every URL once from there on.
    const { urls } = await drain(f);
    expect(urls).toEqual(items.slice(10).map((it) => it.url));
    expect(await segments(store)).toEqual([]);
  });

  it('a spill racing a claim or a commit of a tail entry changes nothing', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    // No spill options: the tail is read by hand, as spillTail reads it.
    const f = new Frontier(redis, campaign, HOST);
    await f.enqueue(Array.from({ length: 30 }, (_, n) => item(n)));
    const flat = await redis.zrange(k.frontier, 10, -1, 'WITHSCORES');
    const tail: [string, string][] = [];
    for (let i = 0; i < flat.length; i += 2) tail.push([flat[i + 1], flat[i]]);
    // Meanwhile the head drains and the tail's first entry is claimed.
    for (let i = 0; i < 10; i++) {
      const c = (await f.claim())!;
      await f.commit(c.member, 'fetched', 0, []);
    }
    const claimed = (await f.claim())!;
    expect(claimed.member).toBe(tail[0][1]);
    expect(await registerSegment(redis, k, 'late', tail)).toBe(0);
    // Committed: gone from the frontier, the stale tail is refused again.
    await f.commit(claimed.member, 'fetched', 0, []);
    expect(await registerSegment(redis, k, 'late', tail)).toBe(0);
    expect(await redis.zcard(k.frontier)).toBe(19);
    expect(await redis.exists(k.spill)).toBe(0);
    expect((await f.stats()).spilled ?? 0).toBe(0);
    // A tail still as read moves.
    expect(await registerSegment(redis, k, 'ok', tail.slice(1))).toBe(1);
    expect(await redis.zcard(k.frontier)).toBe(0);
    expect(await f.size()).toBe(19);
  });

  it('never takes a host with segments left as drained: a store it cannot read fails the claim, and so does having none', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    const f = new Frontier(redis, campaign, HOST, spill);
    await f.enqueue(Array.from({ length: 30 }, (_, n) => item(n)));
    // The head in Redis drains; the segments are left.
    for (let i = 0; i < 10; i++) {
      const c = (await f.claim())!;
      await f.commit(c.member, 'fetched', 0, []);
    }
    expect(await redis.zcard(k.frontier)).toBe(0);
    const down = Object.assign(Object.create(store) as FolderObjectStore, { read: () => Promise.reject(new Error('store down')) });
    await expect(new Frontier(redis, campaign, HOST, { above: 20, store: down }).claim()).rejects.toMatchObject({ code: 'SPILL_SEGMENT_UNREADABLE' });
    await expect(new Frontier(redis, campaign, HOST).claim()).rejects.toBeInstanceOf(FrontierSpillError);
    expect(await redis.exists(k.awake)).toBe(1);
    expect(await f.size()).toBeGreaterThan(0);
    // The sweep after a Redis loss finds the host by its segments.
    expect(await hostsWithFrontier(redis, campaign, 'spill')).toEqual([HOST]);
    // With the store back, the claim reads them.
    expect((await f.claim())?.entry.url).toBe(`http://${HOST}/p/10`);
  });

  it('spills the frontier of a campaign started before spilling existed (entries and counters as the older release wrote them)', async () => {
    const campaign = `t-${randomUUID()}`;
    const k = hostKeys(campaign, HOST);
    // The older release's enqueue: its script, with no spill keys or counter anywhere.
    const old = new Frontier(redis, campaign, HOST);
    const items = Array.from({ length: 40 }, (_, n) => item(n));
    await old.enqueue(items);
    expect(await redis.hget(k.stats, 'spilled')).toBeNull();
    const f = new Frontier(redis, campaign, HOST, spill);
    await f.enqueue([item(40)]);
    items.push(item(40));
    expect(await redis.zcard(k.frontier)).toBeLessThanOrEqual(20);
    expect(await f.size()).toBe(41);
    expect((await drain(f)).urls).toEqual(items.map((it) => it.url));
  });
});
