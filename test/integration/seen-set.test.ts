// The bucketed seen set and compact frontier members on real Redis
// (src/redis/seen-set.ts, src/redis/frontier.ts, issue 40 parts 2 and 4), and
// the per-campaign layout that gates them (src/redis/frontier-layout.ts): a
// URL is enqueued once however the host's buckets split between its first
// sighting and the next, a match must be a whole fingerprint (not 8 bytes
// straddling two), a seen URL costs about 9 bytes; a campaign created before
// (no marker, keys as the older release wrote them) keeps its seen SETs and
// tab-separated members for good and crawls as before, a new one is compact,
// and both name every page's referrer in full.
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import type { SessionInput, SessionResult } from '../../activities/types';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { createRedis } from '../../src/redis/client';
import { decodeEntry, encodeEntry, Frontier, type EnqueueItem } from '../../src/redis/frontier';
import { FRONTIER_LAYOUT_FIELD, forgetFrontierLayouts, frontierLayout, markFrontierLayout } from '../../src/redis/frontier-layout';
import { contentKeys, hostKeys } from '../../src/redis/keys';
import { SEEN_BUCKET_FILL, seenFingerprint64 } from '../../src/redis/seen-set';
import { readIndex } from '../../src/storage/index-writer';
import { readWarcDir } from '../../src/storage/warc-reader';
import { urlFingerprint } from '../../src/url/fingerprint';
import { hostKey } from '../../src/url/normalize';
import { generateSites } from '../web/test-web';
import { createHarness, pageRequests, type Harness } from '../support/harness';

jest.setTimeout(90_000);

const item = (url: string): EnqueueItem => ({ url, fp: urlFingerprint(url), depth: 1, referrer: null });
const urls = (host: string, from: number, to: number): EnqueueItem[] => Array.from({ length: to - from }, (_, i) => item(`http://${host}/a/page-${from + i}.html`));

/** A fingerprint (src/url/fingerprint.ts form: 16 base64url characters) whose first 8 bytes are `bytes`. */
const fpOfBytes = (bytes: number[]): string => Buffer.from([...bytes, 0, 0, 0, 0].slice(0, 12)).toString('base64url');

/** A campaign key of layout 2, as prepareCampaign makes new ones. */
async function compactCampaign(redis: Redis): Promise<string> {
  const ck = `seen-${randomUUID()}`;
  await markFrontierLayout(redis, ck);
  return ck;
}

describe('seen set', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(() => redis.disconnect());

  it('enqueues each URL once across bucket splits, whatever the batches', async () => {
    const ck = await compactCampaign(redis);
    const f = new Frontier(redis, ck, 'split.test');
    const seen = hostKeys(ck, 'split.test').seen;
    const total = 30 * SEEN_BUCKET_FILL;
    let added = 0;
    // Batches of 144 (one and a half buckets): each grows the host past a split or two; after each, every URL so far offered again.
    for (let from = 0; from < total; from += 144) {
      added += (await f.enqueue(urls('split.test', from, from + 144))).added;
      expect((await f.enqueue(urls('split.test', 0, from + 144))).added).toBe(0);
    }
    expect(added).toBe(total);
    expect(await f.size()).toBe(total);
    // The buckets did split: about one a SEEN_BUCKET_FILL URLs, and the count is the URLs'.
    expect(await redis.type(seen)).toBe('hash');
    const [level, split, count] = (await redis.hget(seen, '#'))!.split(' ').map(Number);
    expect(count).toBe(total);
    expect(2 ** level + split).toBe(Math.floor(total / SEEN_BUCKET_FILL));
    // Every bucket holds whole 8-byte fingerprints, each in the bucket its hash names.
    const all = await redis.hgetallBuffer(seen);
    let held = 0;
    for (const [field, v] of Object.entries(all)) {
      if (field === '#') continue;
      expect(v.length % 8).toBe(0);
      held += v.length / 8;
      for (let i = 0; i < v.length; i += 8) {
        const h = v.readUIntBE(i, 3);
        const b = h % 2 ** level < split ? h % 2 ** (level + 1) : h % 2 ** level;
        expect(b).toBe(Number(field));
      }
    }
    expect(held).toBe(total);
    // What a seen URL costs here (docs/operations.md): about 9 bytes, at most 12.
    const bytes = Number(await redis.call('MEMORY', 'USAGE', seen, 'SAMPLES', '0'));
    expect(bytes / total).toBeLessThanOrEqual(12);
    // And a URL never offered is new.
    expect((await f.enqueue([item('http://split.test/fresh')])).added).toBe(1);
  });

  it('keeps the first 64 bits of each fingerprint, and finds only whole ones', async () => {
    const ck = await compactCampaign(redis);
    const f = new Frontier(redis, ck, 'bits.test');
    const a = fpOfBytes([1, 2, 3, 4, 5, 6, 7, 8]);
    const b = fpOfBytes([9, 10, 11, 12, 13, 14, 15, 16]);
    await f.markSeen([a, b]);
    expect(await redis.hgetBuffer(hostKeys(ck, 'bits.test').seen, '0')).toEqual(Buffer.concat([seenFingerprint64(a), seenFingerprint64(b)]));
    // 8 bytes that straddle the two fingerprints are in the bucket's string, yet no fingerprint's.
    const straddling = fpOfBytes([5, 6, 7, 8, 9, 10, 11, 12]);
    // Same first 64 bits as `a`, other last 32: the stated collision (docs/operations.md).
    const sameFirst64 = Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 99, 99, 99, 99]).toString('base64url');
    expect(await f.hasSeen([a, b, straddling, sameFirst64, fpOfBytes([1, 2, 3, 4, 5, 6, 7, 9])])).toEqual([true, true, false, true, false]);
    // Marking again adds nothing; a few URLs stay one short bucket, a listpack.
    await f.markSeen([a, b, a]);
    expect((await redis.hget(hostKeys(ck, 'bits.test').seen, '#'))!.split(' ')[2]).toBe('2');
    expect(await redis.object('ENCODING', hostKeys(ck, 'bits.test').seen)).toBe('listpack');
  });

  it('keeps every seen set of a campaign without the marker a SET, its hosts old and new, and its members in the older form', async () => {
    const ck = `seen-${randomUUID()}`;
    const k = hostKeys(ck, 'old.test');
    const f = new Frontier(redis, ck, 'old.test');
    // What the previous release's enqueue left: 16-character fingerprints in a SET.
    const before = urls('old.test', 0, 200);
    await redis.sadd(k.seen, ...before.map((it) => it.fp));
    expect(await frontierLayout(redis, ck)).toBe(1);
    expect((await f.enqueue(urls('old.test', 0, 300))).added).toBe(100);
    await f.markSeen([urlFingerprint('http://old.test/rendered.css')]);
    expect(await redis.type(k.seen)).toBe('set');
    expect(await redis.scard(k.seen)).toBe(301);
    expect(await f.hasSeen([before[0].fp, urlFingerprint('http://old.test/a/page-299.html'), urlFingerprint('http://old.test/never')])).toEqual([true, true, false]);
    // Its members are the older form, scheme and host spelled out.
    expect(await redis.zrange(k.frontier, 0, 0)).toEqual(['1\thttp://old.test/a/page-200.html\t']);
    // A host that had no seen set yet starts one the same way: the campaign's layout decides, not the key's absence.
    const fresh = new Frontier(redis, ck, 'new.test');
    await fresh.enqueue([{ ...item('http://new.test/'), referrer: 'http://old.test/' }]);
    await fresh.markSeen([urlFingerprint('http://new.test/x.css')]);
    expect(await redis.type(hostKeys(ck, 'new.test').seen)).toBe('set');
    expect(await redis.smembers(hostKeys(ck, 'new.test').seen)).toEqual(expect.arrayContaining([urlFingerprint('http://new.test/'), urlFingerprint('http://new.test/x.css')]));
    expect(await redis.zrange(hostKeys(ck, 'new.test').frontier, 0, -1)).toEqual(['1\thttp://new.test/\thttp://old.test/']);
  });
});

/** Sessions' expected failures would only log noise. */
const mockEnv = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

describe('a campaign keeps the layout it was created with, and crawls the same either way', () => {
  let h: Harness;
  let redis: Redis;
  let rt: WorkerRuntime;
  const PAGES = 12;
  beforeAll(async () => {
    h = await createHarness('seen-set', { workers: 0 });
    for (const name of ['old', 'new']) {
      for (const spec of generateSites({ count: 1, pages: PAGES, fanOut: 3, hostPattern: () => `${name}.layout.test`, seed: 7 })) h.web.addSite(spec);
    }
    redis = createRedis(process.env.REDIS_URL!) as Redis;
    rt = new WorkerRuntime({ redis, temporal: h.client });
  });
  afterAll(async () => {
    await rt?.close();
    redis?.disconnect();
    await h?.close();
  });

  /** A campaign of one seeded host, prepared by this release's prepareCampaign; its session as Temporal runs it. */
  async function prepared(name: string) {
    const seed = h.web.url(`${name}.layout.test`, '/');
    const host = hostKey(seed);
    const campaignKey = `layout-${name}-${randomUUID()}`;
    const settings = resolveCampaignSettings(
      {
        seeds: [seed],
        scope: { mode: 'same-host' },
        politeness: { minDelayMs: 0 },
        sitemaps: 'off',
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
      seed,
      host,
      campaignKey,
      dir: settings.output.dir,
      keys: hostKeys(campaignKey, host),
      session: () => mockEnv().run(acts.crawlSession, input) as Promise<SessionResult>,
    };
  }

  /** Every page of the site fetched once, each link's line and WARC metadata naming its referrer's URL. */
  async function expectCrawled(c: Awaited<ReturnType<typeof prepared>>) {
    const r = await c.session();
    expect(r).toMatchObject({ end: 'drained', pages: PAGES, stats: { fetched: PAGES, failed: 0 }, frontier: 0 });
    const fetched = pageRequests(h.web.requests()).filter((q) => q.host === c.host.split(':')[0]);
    expect(fetched).toHaveLength(PAGES);
    expect(new Set(fetched.map((q) => q.path)).size).toBe(PAGES);
    const lines = (await readIndex(path.join(c.dir, 'index'))).filter((e) => e.outcome === 'fetched');
    expect(lines).toHaveLength(PAGES);
    const crawled = new Set(lines.map((e) => e.url));
    const meta = (await readWarcDir(path.join(c.dir, 'warc'))).filter((w) => w.type === 'metadata');
    for (const e of lines) {
      if (e.url === c.seed) {
        expect(e.referrer).toBeNull();
        continue;
      }
      // The referrer in full: a page of this crawl, in the index line and as the WARC metadata's `via`.
      expect({ url: e.url, referrer: crawled.has(e.referrer ?? '') }).toEqual({ url: e.url, referrer: true });
      const m = meta.find((w) => w.targetUri === e.url);
      expect(m?.payload?.toString('utf8')).toContain(`via: ${e.referrer}\r\n`);
    }
    return lines;
  }

  it('a campaign created before the compact layout (no marker, keys as the older release wrote them) keeps its seen SET and member form to the end', async () => {
    const c = await prepared('old');
    // Rewritten as the release before wrote it: no marker, the seed's fingerprint in a SET, its member tab-separated at the older score.
    await redis.hdel(contentKeys(c.campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD);
    await redis.del(c.keys.seen, c.keys.frontier);
    await redis.sadd(c.keys.seen, urlFingerprint(c.seed));
    await redis.zadd(c.keys.frontier, 1, `0\t${c.seed}\t`);
    // A worker of this release, knowing nothing of the campaign, picks it up.
    forgetFrontierLayouts();
    expect(await frontierLayout(redis, c.campaignKey)).toBe(1);
    // What it writes is the older form: a link enqueued now is tab-separated, its host and referrer spelled out.
    const f = new Frontier(redis, c.campaignKey, c.host);
    const extra = h.web.url(`old.layout.test`, '/not-linked');
    await f.enqueue([{ url: extra, fp: urlFingerprint(extra), depth: 1, referrer: c.seed }]);
    expect(await redis.zrange(c.keys.frontier, -1, -1)).toEqual([encodeEntry({ url: extra, depth: 1, referrer: c.seed }, c.host, 1)]);
    expect((await redis.zrange(c.keys.frontier, -1, -1))[0]).toBe(`1\t${extra}\t${c.seed}`);
    await redis.zrem(c.keys.frontier, `1\t${extra}\t${c.seed}`);
    await redis.srem(c.keys.seen, urlFingerprint(extra));
    const lines = await expectCrawled(c);
    // Every URL it saw is in the SET, as the older release keeps them; the marker never appeared.
    expect(await redis.type(c.keys.seen)).toBe('set');
    expect(await redis.smismember(c.keys.seen, ...lines.map((e) => urlFingerprint(e.url)))).toEqual(lines.map(() => 1));
    expect(await redis.hget(contentKeys(c.campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD)).toBeNull();
  });

  it('a new campaign gets the marker, a bucketed seen set and compact members', async () => {
    const c = await prepared('new');
    expect(await redis.hget(contentKeys(c.campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD)).toBe('2');
    // The seed is in the compact form: no scheme and host, depth 0.
    const [seedMember] = await redis.zrange(c.keys.frontier, 0, -1);
    expect(seedMember).not.toContain(c.host);
    expect(decodeEntry(seedMember, c.host)).toEqual({ url: c.seed, depth: 0, referrer: null });
    const f = new Frontier(redis, c.campaignKey, c.host);
    const extra = h.web.url(`new.layout.test`, '/not-linked');
    await f.enqueue([{ url: extra, fp: urlFingerprint(extra), depth: 1, referrer: c.seed }]);
    const member = (await redis.zrange(c.keys.frontier, -1, -1))[0];
    expect(member).toBe(encodeEntry({ url: extra, depth: 1, referrer: c.seed }, c.host, 2));
    expect(member).not.toContain(c.host);
    expect(decodeEntry(member, c.host).referrer).toBe(c.seed);
    await redis.zrem(c.keys.frontier, member);
    const lines = await expectCrawled(c);
    expect(await redis.type(c.keys.seen)).toBe('hash');
    expect(await f.hasSeen(lines.map((e) => urlFingerprint(e.url)))).toEqual(lines.map(() => true));
  });
});
