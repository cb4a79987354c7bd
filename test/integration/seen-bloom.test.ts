// The Bloom filter seen set on real Redis (src/redis/seen-bloom.ts, issue 40
// part 2's opt-in mode): no URL is ever enqueued twice (a Bloom filter has no
// false negatives), across the filter's levels and whatever the batches; the
// host's `seen` key is the filter's string, at the size the sizing model says;
// the expected skips the scripts add up match the URLs really skipped; and a
// campaign created with `frontier.seen: bloom` crawls a site with every page
// once, reports its expected skips in its totals and status, while a campaign
// created exact keeps its buckets.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import type { SessionInput, SessionResult } from '../../activities/types';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { formatStatus } from '../../src/cli/commands/campaign-control';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { createRedis } from '../../src/redis/client';
import { Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { FRONTIER_LAYOUT, FRONTIER_LAYOUT_FIELD, SEEN_FILTER_FIELD, forgetFrontierLayouts, markFrontierLayout, seenMode } from '../../src/redis/frontier-layout';
import { contentKeys, hostKeys } from '../../src/redis/keys';
import { buildSeedObject, registerSeedBlock } from '../../src/redis/seed-segments';
import {
  BLOOM_FIRST_CAPACITY,
  BLOOM_HEADER_BYTES,
  BLOOM_ONES_BYTES,
  BLOOM_SKIPPED_SCALE,
  bloomBytes,
  bloomExpectedSkipped,
  bloomLevel,
  bloomLevelsFor,
} from '../../src/redis/seen-bloom';
import { readIndex } from '../../src/storage/index-writer';
import { urlFingerprint } from '../../src/url/fingerprint';
import { hostKey } from '../../src/url/normalize';
import { generateSites } from '../web/test-web';
import { createHarness, pageRequests, type Harness } from '../support/harness';
import type { CampaignStatus } from '../../workflows/messages';

jest.setTimeout(120_000);

const item = (url: string): EnqueueItem => ({ url, fp: urlFingerprint(url), depth: 1, referrer: null });
const urls = (host: string, from: number, to: number): EnqueueItem[] => Array.from({ length: to - from }, (_, i) => item(`http://${host}/b/page-${from + i}.html`));

async function bloomCampaign(redis: Redis, rate: number): Promise<string> {
  const ck = `bloom-${randomUUID()}`;
  await markFrontierLayout(redis, ck, FRONTIER_LAYOUT, { kind: 'bloom', rate });
  return ck;
}

describe('Bloom filter seen set', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(() => redis.disconnect());

  it('never enqueues a URL twice across its levels, whatever the batches, in one string of the size the model says', async () => {
    const ck = await bloomCampaign(redis, 0.01);
    expect(await seenMode(redis, ck)).toBe('b0.01');
    const host = 'levels.test';
    const f = new Frontier(redis, ck, host);
    const k = hostKeys(ck, host);
    // Past four levels (128 + 256 + 512 + 1024 URLs), in batches that straddle each boundary.
    const total = 2500;
    let added = 0;
    for (let from = 0; from < total; from += 300) {
      const to = Math.min(total, from + 300);
      added += (await f.enqueue(urls(host, from, to))).added;
      // Everything offered so far, again: all seen (no false negatives), nothing added.
      expect((await f.enqueue(urls(host, 0, to))).added).toBe(0);
    }
    // A few URLs were taken for seen ones (false positives), never more than the rate allows.
    expect(added).toBeGreaterThan(total * 0.98);
    expect(added).toBeLessThanOrEqual(total);
    expect(await f.size()).toBe(added);
    // Every URL the frontier took is seen.
    expect(await f.hasSeen(urls(host, 0, total).map((it) => it.fp))).toEqual(urls(host, 0, total).map(() => true));
    // The host's seen key is the filter's string (no buckets, no SET): header, then every level, exactly.
    expect(await redis.type(k.seen)).toBe('string');
    expect(Number(await redis.getrange(k.seen, 0, BLOOM_HEADER_BYTES - 1))).toBe(added);
    expect(await redis.strlen(k.seen)).toBe(bloomBytes(0.01, added));
    // What a seen URL costs: at most 4 bytes at the default rate (docs/operations.md).
    const bytes = Number(await redis.call('MEMORY', 'USAGE', k.seen, 'SAMPLES', '0'));
    expect(bytes / added).toBeLessThanOrEqual(4);
    // Each level's count of bits set is the bits it really has set: what the expected skips are figured from.
    for (let l = 1; l <= bloomLevelsFor(added); l++) {
      const lv = bloomLevel(0.01, l);
      const start = BLOOM_HEADER_BYTES + Array.from({ length: l - 1 }, (_, i) => bloomLevel(0.01, i + 1).bytes + BLOOM_ONES_BYTES).reduce((a, b) => a + b, 0);
      const ones = (await redis.getrangeBuffer(k.seen, start + lv.bytes, start + lv.bytes + BLOOM_ONES_BYTES - 1)).readUInt32BE(0);
      expect({ level: l, ones }).toEqual({ level: l, ones: await redis.bitcount(k.seen, start, start + lv.bytes - 1) });
    }
    // The expected skips the scripts added up: the model's for this many adds, give or take the levels' luck.
    const expected = Number(await redis.hget(k.stats, 'seenSkipped')) / BLOOM_SKIPPED_SCALE;
    expect(expected / bloomExpectedSkipped(0.01, added)).toBeGreaterThan(0.5);
    expect(expected / bloomExpectedSkipped(0.01, added)).toBeLessThan(1.5);
  });

  it('marks and tests like the exact set: markSeen adds once, hasSeen finds, a new URL is new', async () => {
    const ck = await bloomCampaign(redis, 0.01);
    const f = new Frontier(redis, ck, 'marks.test');
    const a = urlFingerprint('http://marks.test/a.css');
    const b = urlFingerprint('http://marks.test/b.js');
    expect(await f.hasSeen([a, b])).toEqual([false, false]);
    await f.markSeen([a, b, a]);
    expect(Number(await redis.getrange(hostKeys(ck, 'marks.test').seen, 0, BLOOM_HEADER_BYTES - 1))).toBe(2);
    expect(await f.hasSeen([a, b, urlFingerprint('http://marks.test/c.png')])).toEqual([true, true, false]);
    // A URL marked seen is not enqueued; its neighbour is.
    expect((await f.enqueue([item('http://marks.test/a.css'), item('http://marks.test/d.html')])).added).toBe(1);
  });

  it('at a high rate, skips URLs and says so: the expected skips come within a few of those really skipped', async () => {
    const ck = await bloomCampaign(redis, 0.1);
    const host = 'lossy.test';
    const f = new Frontier(redis, ck, host);
    const total = 8 * BLOOM_FIRST_CAPACITY * 7;
    let added = 0;
    for (let from = 0; from < total; from += 500) added += (await f.enqueue(urls(host, from, Math.min(total, from + 500)))).added;
    const skipped = total - added;
    const expected = Number(await redis.hget(hostKeys(ck, host).stats, 'seenSkipped')) / BLOOM_SKIPPED_SCALE;
    expect(skipped).toBeGreaterThan(0);
    // A sum of independent chances: within 4 standard deviations (about its square root) of its expectation.
    expect(Math.abs(skipped - expected)).toBeLessThanOrEqual(4 * Math.sqrt(expected) + 2);
  });

  it("a seed list's blocks count their expected skips as an enqueue does", async () => {
    const ck = await bloomCampaign(redis, 0.1);
    const host = 'seeds.test';
    const mode = await seenMode(redis, ck);
    const total = 8 * BLOOM_FIRST_CAPACITY * 7;
    let added = 0;
    for (let from = 0; from < total; from += 500) {
      const seeds = urls(host, from, Math.min(total, from + 500)).map((i) => ({ url: i.url, fp: i.fp, priority: 0 }));
      const { blocks } = buildSeedObject([{ host, seeds }], 2);
      added += (await registerSeedBlock(redis, ck, mode, `obj${from}`, blocks[0]!))[0];
    }
    const skipped = total - added;
    const expected = Number(await redis.hget(hostKeys(ck, host).stats, 'seenSkipped')) / BLOOM_SKIPPED_SCALE;
    expect(skipped).toBeGreaterThan(0);
    expect(Math.abs(skipped - expected)).toBeLessThanOrEqual(4 * Math.sqrt(expected) + 2);
  });
});

/** Sessions' expected failures would only log noise. */
const mockEnv = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

describe('a campaign created with frontier.seen bloom', () => {
  let h: Harness;
  let redis: Redis;
  let rt: WorkerRuntime;
  const PAGES = 60;
  const LOSSY_PAGES = 400;
  beforeAll(async () => {
    h = await createHarness('seen-bloom', { workers: 0 });
    for (const name of ['bloom', 'exact']) {
      for (const spec of generateSites({ count: 1, pages: PAGES, fanOut: 4, hostPattern: () => `${name}.seen.test`, seed: 11 })) h.web.addSite(spec);
    }
    for (const spec of generateSites({ count: 1, pages: LOSSY_PAGES, fanOut: 6, hostPattern: () => 'lossy.seen.test', seed: 5 })) h.web.addSite(spec);
    redis = createRedis(process.env.REDIS_URL!) as Redis;
    rt = new WorkerRuntime({ redis, temporal: h.client });
  });
  afterAll(async () => {
    await rt?.close();
    redis?.disconnect();
    await h?.close();
  });

  /** A campaign of one seeded host, prepared by prepareCampaign with these frontier settings; its session as Temporal runs it. */
  async function prepared(name: string, frontier: { seen?: 'exact' | 'bloom'; seenRate?: number }) {
    const seed = h.web.url(`${name}.seen.test`, '/');
    const host = hostKey(seed);
    const campaignKey = `seen-${name}-${randomUUID()}`;
    const settings = resolveCampaignSettings(
      {
        seeds: [seed],
        scope: { mode: 'same-host' },
        politeness: { minDelayMs: 0 },
        sitemaps: 'off',
        frontier,
        fetch: { resolve: h.web.resolveArgs() },
        output: { dir: path.join(h.outDir, campaignKey) },
      },
      campaignKey,
    );
    const acts = createActivities(rt);
    await mockEnv().run(acts.prepareCampaign, { settings, campaignKey });
    await new CampaignHosts(redis, campaignKey).dispatched(host, '1', 1);
    const input: SessionInput = { campaignKey, campaignWorkflowId: 'no-campaign', host, gen: 1, configVersion: 1 };
    return {
      host,
      campaignKey,
      dir: settings.output.dir,
      keys: hostKeys(campaignKey, host),
      session: () => mockEnv().run(acts.crawlSession, input) as Promise<SessionResult>,
    };
  }

  const statusOf = (campaignKey: string, totals: Awaited<ReturnType<CampaignHosts['totals']>>): string =>
    formatStatus(
      {
        campaignId: campaignKey,
        campaignKey,
        status: 'running',
        paused: false,
        startedAt: '',
        updatedAt: '',
        totals: { ...totals, activeHosts: 0, readyHosts: 0 },
        problems: 0,
      } as unknown as CampaignStatus,
      [],
    );

  it('fetches every page once, keeps a Bloom filter string per host, and reports its expected skips', async () => {
    const c = await prepared('bloom', { seen: 'bloom' });
    const meta = contentKeys(c.campaignKey, 0).meta;
    expect(await redis.hmget(meta, FRONTIER_LAYOUT_FIELD, SEEN_FILTER_FIELD)).toEqual(['2', 'bloom 0.01']);
    const r = await c.session();
    expect(r).toMatchObject({ end: 'drained', pages: PAGES, stats: { fetched: PAGES, failed: 0 }, frontier: 0 });
    // Every page once: no page fetched twice (no false negatives), none missed on a site this small.
    const fetched = pageRequests(h.web.requests()).filter((q) => q.host === c.host.split(':')[0]);
    expect(fetched).toHaveLength(PAGES);
    expect(new Set(fetched.map((q) => q.path)).size).toBe(PAGES);
    const lines = (await readIndex(path.join(c.dir, 'index'))).filter((e) => e.outcome === 'fetched');
    expect(new Set(lines.map((e) => e.url)).size).toBe(PAGES);
    // The bloom keys, not the exact buckets.
    expect(await redis.type(c.keys.seen)).toBe('string');
    const added = Number(await redis.getrange(c.keys.seen, 0, BLOOM_HEADER_BYTES - 1));
    expect(added).toBeGreaterThanOrEqual(PAGES);
    expect(await redis.strlen(c.keys.seen)).toBe(bloomBytes(0.01, added));
    // The expected skips reach the host's record and the campaign's totals, and `crawler status` shows them.
    const hosts = new CampaignHosts(redis, c.campaignKey);
    const totals = await hosts.totals();
    const stat = Number(await redis.hget(c.keys.stats, 'seenSkipped'));
    const expected = stat / BLOOM_SKIPPED_SCALE;
    expect(expected).toBeGreaterThan(0);
    expect(totals.seenFilter).toEqual({ rate: 0.01, expectedSkipped: expected });
    expect((await hosts.get(c.host))?.seenSkipped).toBe(stat);
    expect(statusOf(c.campaignKey, totals)).toContain(`expected URLs skipped by the Bloom filter: ${expected.toFixed(1)} (rate 0.01)`);
  });

  it('at a forced high rate, misses pages and reports an expectation of the same order as the pages missed', async () => {
    const c = await prepared('lossy', { seen: 'bloom', seenRate: 0.1 });
    const r = await c.session();
    expect(r.end).toBe('drained');
    const fetched = pageRequests(h.web.requests()).filter((q) => q.host === c.host.split(':')[0]);
    // Still never a page twice.
    expect(new Set(fetched.map((q) => q.path)).size).toBe(fetched.length);
    const missed = LOSSY_PAGES - fetched.length;
    const totals = await new CampaignHosts(redis, c.campaignKey).totals();
    const expected = totals.seenFilter!.expectedSkipped;
    // URLs skipped (pages, and links to the same pages in other spellings) and the pages only they led to.
    expect(missed).toBeGreaterThan(0);
    expect(expected).toBeGreaterThan(0);
    expect(missed).toBeLessThanOrEqual(4 * expected + 10);
    expect(expected).toBeLessThanOrEqual(4 * missed + 10);
    expect(statusOf(c.campaignKey, totals)).toMatch(/expected URLs skipped by the Bloom filter: [1-9]\d*\.\d \(rate 0\.1\)/);
  });

  it('a campaign created exact keeps its buckets and shows nothing new, whatever its settings say later', async () => {
    const c = await prepared('exact', {});
    expect(await redis.hget(contentKeys(c.campaignKey, 0).meta, SEEN_FILTER_FIELD)).toBeNull();
    // Marking it again asking for bloom changes nothing: the markers are written once, when it is created.
    await markFrontierLayout(redis, c.campaignKey, FRONTIER_LAYOUT, { kind: 'bloom', rate: 0.01 });
    expect(await redis.hget(contentKeys(c.campaignKey, 0).meta, SEEN_FILTER_FIELD)).toBeNull();
    forgetFrontierLayouts();
    expect(await seenMode(redis, c.campaignKey)).toBe('2');
    const r = await c.session();
    expect(r).toMatchObject({ end: 'drained', pages: PAGES });
    expect(await redis.type(c.keys.seen)).toBe('hash');
    const totals = await new CampaignHosts(redis, c.campaignKey).totals();
    expect(totals.seenFilter).toBeUndefined();
    expect(statusOf(c.campaignKey, totals)).not.toContain('Bloom');
  });
});
