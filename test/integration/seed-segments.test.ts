// Shared seed segments (src/redis/seed-segments.ts) against real Redis and a
// real folder store: a seed list's chunk lands as one object with a block per
// host, each host's claims read its blocks back in priority and list order,
// a seed listed twice or a chunk landed twice (a retried call) queues nothing
// twice, a load that died between the object and the scripts loses nothing,
// and the campaign's segments all go at its end. The loadSeeds activity
// picks the path by the campaign's marker: a campaign created before it
// (none) keeps every seed in its sorted sets, as the release before did.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import type { LoadSeedsInput, LoadSeedsResult } from '../../activities/types';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { contentKeys } from '../../src/redis/keys';
import { SEED_SEGMENTS_FIELD } from '../../src/redis/seed-segments';
import { hostKey } from '../../src/url/normalize';
import { createHarness, type Harness } from '../support/harness';
import { createRedis } from '../../src/redis/client';
import { Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { markFrontierLayout } from '../../src/redis/frontier-layout';
import { isSharedSegment, removeCampaignSegments, type SpillOptions } from '../../src/redis/frontier-spill';
import { hostKeys } from '../../src/redis/keys';
import { keySlot } from '../../src/redis/key-slot';
import { landSeedChunk, type HostSeeds } from '../../src/redis/seed-segments';
import { FolderObjectStore } from '../../src/storage/folder-object-store';
import type { ObjectStore } from '../../src/storage/object-store';
import { urlFingerprint } from '../../src/url/fingerprint';

jest.setTimeout(60_000);

type Seed = { url: string; fp: string; priority: number };
const seed = (host: string, n: number, priority = 0): Seed => {
  const url = `http://${host}/s/${n}`;
  return { url, fp: urlFingerprint(url), priority };
};
const chunk = (...parts: [string, Seed[]][]): HostSeeds[] => parts.map(([host, seeds]) => ({ host, seeds }));

async function objects(store: ObjectStore, campaign: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list('frontier/')) if (o.key.includes(encodeURIComponent(campaign).replaceAll('.', '%2E'))) out.push(o.key);
  return out;
}

/** Claims and commits until the host's frontier is empty: the URLs in claim order. */
async function drain(f: Frontier): Promise<string[]> {
  const urls: string[] = [];
  for (let c = await f.claim(); c; c = await f.claim()) {
    urls.push(c.entry.url);
    await f.commit(c.member, 'fetched', 0, []);
  }
  return urls;
}

/** The order a host's seeds are claimed in: priority (higher first), then the list's order, each URL once. */
const claimOrder = (seeds: Seed[]): string[] =>
  seeds
    .filter((s, i) => seeds.findIndex((t) => t.url === s.url) === i)
    .map((s, i) => ({ s, i }))
    .sort((a, b) => b.s.priority - a.s.priority || a.i - b.i)
    .map(({ s }) => s.url);

describe('shared seed segments', () => {
  let redis: Redis;
  let dir: string;
  let store: FolderObjectStore;
  let spill: SpillOptions;
  let campaign: string;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'seedseg-'));
    store = new FolderObjectStore(dir);
    spill = { above: 5000, store, readBackGraceMs: 100 };
    campaign = `t-${randomUUID()}`;
    await markFrontierLayout(redis, campaign);
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterAll(async () => {
    await redis.quit();
  });

  it('land a chunk as one object, give every seed back once in priority and list order, and queue nothing twice', async () => {
    const a = Array.from({ length: 14 }, (_, n) => seed('a.test', n, n === 5 ? 2 : n === 7 ? -1 : 0));
    const b = Array.from({ length: 7 }, (_, n) => seed('b.test', n));
    // The list's first call: a's first three seeds straight into its sorted set, as today.
    const fa = new Frontier(redis, campaign, 'a.test', spill);
    expect((await fa.enqueue(a.slice(0, 3).map((s) => ({ url: s.url, fp: s.fp, depth: 0, referrer: null, priority: s.priority })))).added).toBe(3);

    // Chunk 1: a's seeds 3..9 with seed 4 listed twice, b's 0..4, and c without seeds.
    const one = chunk(['a.test', [...a.slice(3, 10), a[4]!]], ['b.test', b.slice(0, 5)], ['c.test', []]);
    const first = await landSeedChunk(redis, store, campaign, '2', one);
    expect(Object.fromEntries(first.added)).toEqual({ 'a.test': 7, 'b.test': 5 });
    // b has no sorted set and is not awake: it must be woken; a's first seeds woke it already (not awake either).
    expect(first.wake.sort()).toEqual(['a.test', 'b.test']);
    // The same chunk again (a retried call): a new object, nothing registered, nothing counted.
    const again = await landSeedChunk(redis, store, campaign, '2', one);
    expect(Object.fromEntries(again.added)).toEqual({ 'a.test': 0, 'b.test': 0 });
    // Chunk 2: a's 10..13 with seed 1 (in Redis already) and seed 8 (in chunk 1) listed again, b's 5 and 6.
    await landSeedChunk(redis, store, campaign, '2', chunk(['a.test', [a[10]!, a[1]!, a[11]!, a[8]!, a[12]!, a[13]!]], ['b.test', b.slice(5)]));

    const ka = hostKeys(campaign, 'a.test');
    const kb = hostKeys(campaign, 'b.test');
    // Three objects, one per chunk landed; a: one segment a chunk (the retry registered none), b too.
    expect(await objects(store, campaign)).toHaveLength(3);
    const aSegments = await redis.zrange(ka.spill, 0, -1);
    expect(aSegments).toHaveLength(2);
    expect(aSegments.every(isSharedSegment)).toBe(true);
    // Chunk 2's block for a names its two entries seen before (positions 1 and 3).
    expect(aSegments[1]).toMatch(/\.1,3$/);
    expect(await redis.zcard(kb.spill)).toBe(2);
    // Counted as queued: in Redis (a's first three) and in segments.
    expect(await redis.zcard(ka.frontier)).toBe(3);
    expect(await fa.size()).toBe(14);
    const fb = new Frontier(redis, campaign, 'b.test', spill);
    expect(await fb.size()).toBe(7);
    expect(await redis.exists(hostKeys(campaign, 'c.test').spill)).toBe(0);
    // The seen set knows every seed, so a link to one later is not queued again.
    expect(await fa.hasSeen(a.map((s) => s.fp))).toEqual(a.map(() => true));
    expect((await fa.enqueue([{ url: a[9]!.url, fp: a[9]!.fp, depth: 1, referrer: null }])).added).toBe(0);
    // A link found meanwhile (depth 1) comes after every seed of its priority, before those of a lower one (seed 7's).
    const link: EnqueueItem = { url: 'http://a.test/linked', fp: urlFingerprint('http://a.test/linked'), depth: 1, referrer: null };
    expect((await fa.enqueue([link])).added).toBe(1);

    expect(await drain(fa)).toEqual([...claimOrder(a).filter((u) => u !== a[7]!.url), link.url, a[7]!.url]);
    expect(await drain(fb)).toEqual(claimOrder(b));
    expect(await redis.exists(ka.spill, kb.spill)).toBe(0);
    expect((await fa.stats()).spilled ?? 0).toBe(0);
    expect((await fb.stats()).fetched).toBe(7);
    // Drained hosts do not remove a shared object (other hosts' blocks are in it): the campaign's end does.
    expect(await objects(store, campaign)).toHaveLength(3);
    expect(await removeCampaignSegments(store, campaign)).toBe(3);
    expect(await objects(store, campaign)).toEqual([]);
  });

  it('a load killed between the object and its scripts, or part way through them, loses and doubles nothing', async () => {
    const hosts = ['h0.test', 'h1.test', 'h2.test'];
    const seeds = new Map(hosts.map((h) => [h, Array.from({ length: 6 }, (_, n) => seed(h, n, n % 3 === 2 ? 1 : 0))]));
    const one = chunk(...hosts.map((h): [string, Seed[]] => [h, seeds.get(h)!]));
    // The object is written, then the worker dies before any script reaches Redis.
    const dead = jest.spyOn(redis, 'crawlSeedRegister').mockImplementation(() => Promise.reject(new Error('worker killed')));
    await expect(landSeedChunk(redis, store, campaign, '2', one)).rejects.toThrow('worker killed');
    dead.mockRestore();
    expect(await objects(store, campaign)).toHaveLength(1);
    for (const h of hosts) {
      expect(await new Frontier(redis, campaign, h, spill).size()).toBe(0);
      expect(await new Frontier(redis, campaign, h, spill).hasSeen(seeds.get(h)!.map((s) => s.fp))).toEqual(seeds.get(h)!.map(() => false));
    }
    // The retry gets through for h0's call only (h0's, and any host's that shares its slot: one script registers those together), then dies again.
    const real = redis.crawlSeedRegister.bind(redis);
    const h0 = hostKeys(campaign, 'h0.test').seen;
    const partly = jest
      .spyOn(redis, 'crawlSeedRegister')
      .mockImplementation(((...args: Parameters<typeof real>) => (args.includes(h0) ? real(...args) : Promise.reject(new Error('worker killed')))) as typeof real);
    await expect(landSeedChunk(redis, store, campaign, '2', one)).rejects.toThrow('worker killed');
    partly.mockRestore();
    const withH0 = (h: string) => keySlot(hostKeys(campaign, h).seen) === keySlot(h0);
    for (const h of hosts) expect(await new Frontier(redis, campaign, h, spill).size()).toBe(withH0(h) ? 6 : 0);
    // The next retry reads the chunk again (the heartbeat stayed at its start): what the last one registered is skipped.
    const last = await landSeedChunk(redis, store, campaign, '2', one);
    expect(Object.fromEntries(last.added)).toEqual(Object.fromEntries(hosts.map((h) => [h, withH0(h) ? 0 : 6])));
    expect(await objects(store, campaign)).toHaveLength(3);
    for (const h of hosts) {
      const f = new Frontier(redis, campaign, h, spill);
      expect(await redis.zcard(hostKeys(campaign, h).spill)).toBe(1);
      expect(await drain(f)).toEqual(claimOrder(seeds.get(h)!));
    }
    expect(await removeCampaignSegments(store, campaign)).toBe(3);
  });

  it('registers the blocks of hosts that share a slot in one script, each host its own seeds, numbering and skips', async () => {
    // Hosts whose keys land in one slot (one script call for them all), found by name.
    const slot = keySlot(hostKeys(campaign, 'k0.test').seen);
    const hosts = ['k0.test'];
    for (let i = 1; hosts.length < 4; i++) if (keySlot(hostKeys(campaign, `k${i}.test`).seen) === slot) hosts.push(`k${i}.test`);
    const seeds = new Map(hosts.map((h, j) => [h, Array.from({ length: 3 + j }, (_, n) => seed(h, n, n === 1 ? 2 : 0))]));
    // One host's second seed seen before (as a retried call finds it): skipped by name, its neighbours' blocks unaffected.
    await new Frontier(redis, campaign, hosts[2]!, spill).markSeen([seeds.get(hosts[2]!)![1]!.fp]);
    const calls = jest.spyOn(redis, 'crawlSeedRegister');
    const r = await landSeedChunk(redis, store, campaign, '2', chunk(...hosts.map((h): [string, Seed[]] => [h, seeds.get(h)!])));
    expect(calls).toHaveBeenCalledTimes(1);
    calls.mockRestore();
    expect(Object.fromEntries(r.added)).toEqual(Object.fromEntries(hosts.map((h, j) => [h, j === 2 ? 4 : 3 + j])));
    expect(r.wake).toEqual(hosts);
    for (const [j, h] of hosts.entries()) {
      const listed = seeds.get(h)!;
      const f = new Frontier(redis, campaign, h, spill);
      expect(await f.size()).toBe(j === 2 ? 4 : 3 + j);
      expect(await drain(f)).toEqual(claimOrder(j === 2 ? listed.filter((_, n) => n !== 1) : listed));
    }
  });

  it('a block read back by a refill that Redis then lost is read again from its object, nothing lost', async () => {
    const s = Array.from({ length: 5 }, (_, n) => seed('r.test', n));
    await landSeedChunk(redis, store, campaign, '2', chunk(['r.test', s]));
    const k = hostKeys(campaign, 'r.test');
    const f = new Frontier(redis, campaign, 'r.test', spill);
    const before = { spill: await redis.zrange(k.spill, 0, -1, 'WITHSCORES'), spilled: await redis.hget(k.stats, 'spilled') };
    const first = (await f.claim())!;
    expect(first.entry.url).toBe(s[0]!.url);
    // Redis comes back without the refill and the claim: the segment registered, its entries not in the sorted set.
    await redis.del(k.frontier, k.current, k.spillDone);
    await redis.zadd(k.spill, before.spill[1]!, before.spill[0]!);
    await redis.hset(k.stats, 'spilled', before.spilled!);
    // Long past the read-back grace: the shared object is still there all the same.
    await new Promise((r) => setTimeout(r, 300));
    expect(await drain(f)).toEqual(s.map((x) => x.url));
  });
});

describe('loadSeeds', () => {
  let h: Harness;
  let redis: Redis;
  let rt: WorkerRuntime;
  const HOSTS = ['x.seedseg.test', 'y.seedseg.test'];
  const PER_HOST = 6;
  beforeAll(async () => {
    h = await createHarness('seed-segments', { workers: 0 });
    for (const host of HOSTS) h.web.addSite({ host, pages: PER_HOST, fanOut: 0 });
    redis = createRedis(process.env.REDIS_URL!) as Redis;
    rt = new WorkerRuntime({ redis, temporal: h.client });
  });
  afterAll(async () => {
    await rt?.close();
    redis?.disconnect();
    await h?.close();
  });

  /** A campaign over a list of both hosts' pages (host after host for each page, the first page listed twice), prepared as the workflow does. */
  async function prepared(name: string) {
    const urls = Array.from({ length: PER_HOST }, (_, p) => HOSTS.map((x) => h.web.url(x, p === 0 ? '/' : `/page/${p}`))).flat();
    const file = path.join(h.outDir, `${name}.txt`);
    fs.writeFileSync(file, [...urls, urls[0]].join('\n'));
    const campaignKey = `${name}-${randomUUID()}`;
    const settings = resolveCampaignSettings(
      { seedsFile: file, scope: { mode: 'same-host' }, sitemaps: 'off', fetch: { resolve: h.web.resolveArgs() }, output: { dir: path.join(h.outDir, campaignKey) } },
      campaignKey,
    );
    const acts = createActivities(rt);
    await new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') }).run(acts.prepareCampaign, { settings, campaignKey });
    /** One loadSeeds call; `retryFrom`: run as a retry whose last heartbeat was there. */
    const load = (input: Omit<LoadSeedsInput, 'campaignKey'>, retryFrom?: LoadSeedsInput['from']) =>
      new MockActivityEnvironment(retryFrom ? { heartbeatDetails: retryFrom, attempt: 2 } : undefined, { logger: new DefaultLogger('ERROR') }).run(acts.loadSeeds, {
        ...input,
        campaignKey,
      }) as Promise<LoadSeedsResult>;
    const frontiers = HOSTS.map(
      (x) => new Frontier(redis, campaignKey, hostKey(h.web.url(x, '/')), { above: 5000, store: new FolderObjectStore(settings.output.dir), readBackGraceMs: 100 }),
    );
    return { campaignKey, urls, load, frontiers, store: new FolderObjectStore(settings.output.dir) };
  }

  it("lands the list past its first call in shared segments, a retried call adds nothing twice, and every seed is claimed once in the list's order", async () => {
    const c = await prepared('marked');
    // The first call: straight into the sorted sets.
    const first = await c.load({ from: { line: 0, byte: 0, seeds: 0 }, maxSeeds: 3 });
    expect(first).toMatchObject({ seeds: 3, done: false });
    expect(await objects(c.store, c.campaignKey)).toEqual([]);
    // The next: one chunk, one object; run again from the same place (a retry), nothing new.
    const second = await c.load({ from: first.next, maxSeeds: 5 });
    expect(await objects(c.store, c.campaignKey)).toHaveLength(1);
    const retried = await c.load({ from: first.next, maxSeeds: 5 }, first.next);
    expect(retried).toEqual(second);
    expect(await objects(c.store, c.campaignKey)).toHaveLength(2);
    let at = second.next;
    for (let r = second; !r.done; at = r.next) r = await c.load({ from: at, maxSeeds: 5 });
    for (const [i, f] of c.frontiers.entries()) {
      expect(await f.size()).toBe(PER_HOST);
      expect((await redis.zrange(hostKeys(c.campaignKey, f.host).spill, 0, -1)).every(isSharedSegment)).toBe(true);
      expect(await drain(f)).toEqual(c.urls.filter((_, j) => j % HOSTS.length === i));
    }
    expect(await removeCampaignSegments(c.store, c.campaignKey)).toBeGreaterThan(2);
  });

  it('keeps every seed of a campaign created before (no marker) in its sorted sets, as the release before did', async () => {
    const c = await prepared('unmarked');
    // The campaign as an older release created it: without the marker.
    await redis.hdel(contentKeys(c.campaignKey, 0).meta, SEED_SEGMENTS_FIELD);
    let r = await c.load({ from: { line: 0, byte: 0, seeds: 0 }, maxSeeds: 3 });
    while (!r.done) r = await c.load({ from: r.next, maxSeeds: 5 });
    expect(await objects(c.store, c.campaignKey)).toEqual([]);
    for (const [i, f] of c.frontiers.entries()) {
      const k = hostKeys(c.campaignKey, f.host);
      expect({ inRedis: await redis.zcard(k.frontier), segments: await redis.exists(k.spill) }).toEqual({ inRedis: PER_HOST, segments: 0 });
      expect(await drain(f)).toEqual(c.urls.filter((_, j) => j % HOSTS.length === i));
    }
  });
});
