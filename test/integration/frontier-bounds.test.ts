// Issue 23 on real Redis: a link bomb reaches a host's frontier in short
// script calls and no further than its page budget can use; sitemaps stay
// within budgets.maxSitemapsPerHost whoever enqueues them; and a robots.txt
// listing 5,000 sitemaps that all 404 does not keep a 10-page campaign busy.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { routeCandidates, type Candidate } from '../../activities/discovery';
import type { CampaignRuntime, WorkerRuntime } from '../../activities/runtime';
import { resolveCampaignSettings, type CampaignInput } from '../../src/config/campaign';
import { reserveBudget } from '../../src/redis/campaign-store';
import { createRedis } from '../../src/redis/client';
import { Frontier, MAX_ENQUEUE_BATCH, type EnqueueItem, type EntryKind } from '../../src/redis/frontier';
import { markFrontierLayout } from '../../src/redis/frontier-layout';
import { urlFingerprint } from '../../src/url/fingerprint';
import { compileUrlRules } from '../../src/url/url-rules';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';

jest.setTimeout(180_000);

const item = (url: string, kind?: EntryKind): EnqueueItem => ({ url, fp: urlFingerprint(url), depth: 1, referrer: null, ...(kind ? { kind } : {}) });
const many = (host: string, n: number, kind?: EntryKind) => Array.from({ length: n }, (_, i) => item(`http://${host}/${kind ?? 'p'}/${i}`, kind));

// Both layouts (src/redis/frontier-layout.ts): the seen SET campaigns created before keep, the bucketed seen set of new ones.
describe.each([1, 2] as const)('frontier bounds on Redis, layout %d', (layout) => {
  let redis: Redis;
  /** A campaign of this layout. */
  const campaign = async (): Promise<string> => {
    const ck = `bounds-${randomUUID()}`;
    if (layout === 2) await markFrontierLayout(redis, ck);
    return ck;
  };
  /** URLs per call of the enqueue and commit scripts (each item is four arguments, after three: the bounds and the layout; a commit has eight before those). */
  let perCall: number[];
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
    const enqueue = redis.crawlEnqueue.bind(redis);
    const commit = redis.crawlCommit.bind(redis);
    redis.crawlEnqueue = ((...args: Parameters<typeof enqueue>) => {
      perCall.push((args.length - 8) / 4);
      return enqueue(...args);
    }) as typeof redis.crawlEnqueue;
    redis.crawlCommit = ((...args: Parameters<typeof commit>) => {
      perCall.push((args.length - 19) / 4);
      return commit(...args);
    }) as typeof redis.crawlCommit;
  });
  beforeEach(() => {
    perCall = [];
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('enqueues a link bomb in calls of at most MAX_ENQUEUE_BATCH URLs', async () => {
    const f = new Frontier(redis, await campaign(), 'bomb.test');
    expect(await f.enqueue(many('bomb.test', 2500))).toEqual({ added: 2500, awake: false, queued: 2500 });
    expect(perCall).toEqual([MAX_ENQUEUE_BATCH, MAX_ENQUEUE_BATCH, 500]);
  });

  it('commits a page with thousands of links in calls of at most MAX_ENQUEUE_BATCH, the entry last', async () => {
    const f = new Frontier(redis, await campaign(), 'bomb.test');
    await f.enqueue([item('http://bomb.test/')]);
    const c = (await f.claim())!;
    perCall = [];
    const r = await f.commit(c.member, 'fetched', 10, many('bomb.test', 2100));
    expect(r).toEqual({ removed: true, added: 2100, remaining: 2100 });
    expect(perCall).toEqual([MAX_ENQUEUE_BATCH, MAX_ENQUEUE_BATCH, 100]);
    expect(await f.stats()).toMatchObject({ fetched: 1, bytes: 10 });
  });

  it('holds a host to the pages its budget can still fetch: budget − requests − pages queued', async () => {
    const ck = await campaign();
    const f = new Frontier(redis, ck, 'budget.test');
    const bounds = { maxPagesPerHost: 10, maxSitemapsPerHost: 50 };
    await f.enqueue([item('http://budget.test/')], bounds);
    // Three requests so far.
    for (const outcome of ['fetched', 'failed', 'fetched'] as const) {
      await f.enqueue([item(`http://budget.test/${outcome}-${Math.random()}`)], bounds);
      const c = (await f.claim())!;
      await f.commit(c.member, outcome, 0, [], null, bounds);
    }
    const queuedBefore = await f.size();
    expect(await f.stats()).toMatchObject({ fetched: 2, failed: 1 });
    const c = (await f.claim())!;
    // This request makes four; its commit offers 500 links.
    const r = await f.commit(c.member, 'fetched', 0, many('budget.test', 500), null, bounds);
    expect(r.added).toBe(10 - 4 - (queuedBefore - 1));
    expect(r.remaining).toBe(10 - 4);
    // Turned-away URLs are not marked seen: found again with room, they are queued.
    expect(await f.hasSeen([urlFingerprint('http://budget.test/p/0'), urlFingerprint('http://budget.test/p/499')])).toEqual([true, false]);
    // Other hosts' frontiers (routeCandidates' enqueue) are held the same way.
    expect((await new Frontier(redis, ck, 'other.test').enqueue(many('other.test', 500), bounds)).added).toBe(10);
    // Sitemaps take no page room, and without bounds nothing is held back.
    expect((await f.enqueue(many('budget.test', 3, 'sitemap'), bounds)).added).toBe(3);
    expect((await new Frontier(redis, ck, 'free.test').enqueue(many('free.test', 500))).added).toBe(500);
  });

  it('counts sitemaps and index children against maxSitemapsPerHost across calls, whoever makes them', async () => {
    const ck = await campaign();
    const bounds = { maxPagesPerHost: null, maxSitemapsPerHost: 50 };
    const a = new Frontier(redis, ck, 'maps.test');
    expect((await a.enqueue(many('maps.test', 30, 'sitemap'), bounds)).added).toBe(30);
    // Another worker's session, later: a sitemap index's children through the commit.
    const b = new Frontier(redis, ck, 'maps.test');
    const c = (await b.claim())!;
    const r = await b.commit(c.member, 'skipped', 0, many('maps.test', 5000, 'sitemap-child'), null, bounds);
    expect(r.added).toBe(20);
    expect((await b.enqueue(many('maps.test', 10, 'sitemap'), bounds)).added).toBe(0);
    expect(await b.stats()).toMatchObject({ sitemaps: 50 });
    // Pages are not sitemaps: they still go in.
    expect((await b.enqueue(many('maps.test', 5), bounds)).added).toBe(5);
  });

  it('queues embeds ahead of every page, outside the page room, and counts them apart', async () => {
    const ck = await campaign();
    const bounds = { maxPagesPerHost: 3, maxSitemapsPerHost: 50 };
    const f = new Frontier(redis, ck, 'embeds.test');
    // The page room is used up by three pages queued (the highest priority among them).
    expect(
      (
        await f.enqueue(
          many('embeds.test', 3).map((it) => ({ ...it, priority: 8, depth: 0 })),
          bounds,
        )
      ).added,
    ).toBe(3);
    expect((await f.enqueue(many('embeds.test', 2, 'page'), bounds)).added).toBe(0);
    // Embeds take no page room, and do not shrink it for pages either.
    const embeds = many('embeds.test', 4, 'embed').map((it) => ({ ...it, hops: 'LE' }));
    expect((await f.enqueue(embeds, bounds)).added).toBe(4);
    expect(await f.stats()).toMatchObject({ embedsQueued: 4 });
    // They come first, in the order found, whatever the pages' priority.
    const claimed: string[] = [];
    for (let i = 0; i < 4; i++) {
      const c = (await f.claim())!;
      expect(c.entry).toMatchObject({ kind: 'embed', hops: 'LE' });
      claimed.push(c.entry.url);
      await f.commit(c.member, 'embeds', 100, [], null, bounds);
    }
    expect(claimed).toEqual(embeds.map((e) => e.url));
    expect((await f.claim())!.entry.kind).toBeUndefined();
    // Four embeds fetched: the host's page counters are untouched, so its page budget is whole.
    expect(await f.stats()).toMatchObject({ embeds: 4, embedsQueued: 0, bytes: 400 });
    expect((await f.stats()).fetched).toBeUndefined();
    expect((await f.enqueue(many('embeds.test', 2, 'page'), bounds)).added).toBe(0);
  });
});

describe('routeCandidates with the campaign bounds', () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(process.env.REDIS_URL!) as Redis;
  });
  afterAll(async () => {
    await redis.quit();
  });

  /** The parts of the runtimes routing reads: Redis, settings, scope (everything in scope). */
  function runtimes(budgets: CampaignInput['budgets'], scope?: CampaignInput['scope']): { rt: WorkerRuntime; campaign: CampaignRuntime } {
    const settings = resolveCampaignSettings({ seeds: ['http://own.test/'], budgets, scope }, `c-${randomUUID()}`);
    const campaign = {
      key: `route-${randomUUID()}`,
      settings,
      inScope: (urls: string[]) => Promise.resolve(urls.map(() => true)),
      urlRules: compileUrlRules(settings.scope),
    };
    return { rt: { deps: { redis } } as unknown as WorkerRuntime, campaign: campaign as unknown as CampaignRuntime };
  }
  const links = (host: string, n: number, kind?: EntryKind): Candidate[] =>
    Array.from({ length: n }, (_, i) => ({ url: `http://${host}/${kind ?? 'l'}/${i}`, depth: 1, ...(kind ? { kind } : {}) }));

  it('takes the first maxLinks distinct links of a page, holds other hosts to their page budget and returns its own', async () => {
    const { rt, campaign } = runtimes({ maxLinksPerPage: 100, maxPagesPerHost: 30 });
    const woken: string[] = [];
    const r = await routeCandidates(
      rt,
      campaign,
      'own.test',
      'http://own.test/',
      [...links('own.test', 60), ...links('other.test', 600)],
      async (hosts) => {
        woken.push(...hosts);
      },
      { maxLinks: campaign.settings.budgets.maxLinksPerPage },
    );
    expect(r.linksDropped).toBe(560);
    expect(r.own).toHaveLength(60);
    expect(woken).toEqual(['other.test']);
    expect(await new Frontier(redis, campaign.key, 'other.test').size()).toBe(30);
  });

  it('drops sitemaps once the page budget is spent, and takes no more from one index than a host may have', async () => {
    const { rt, campaign } = runtimes({ maxPages: 1, maxSitemapsPerHost: 5 });
    const children = links('own.test', 100, 'sitemap-child');
    const before = await routeCandidates(rt, campaign, 'own.test', 'http://own.test/index.xml', children, async () => {});
    expect(before.own).toHaveLength(5);
    expect(await reserveBudget(redis, campaign.key, 'a-page', 1)).toBe(true);
    const after = await routeCandidates(rt, campaign, 'own.test', 'http://own.test/index.xml', [...children, ...links('own.test', 3)], async () => {});
    expect(after.own.map((c) => c.kind ?? 'page')).toEqual(['page', 'page', 'page']);
  });

  it("fetches a page's embeds past maxDepth and the links cap, outside the scope two embed hops deep and never beyond", async () => {
    const { rt, campaign } = runtimes({ maxDepth: 1, maxLinksPerPage: 2 });
    // Only own.test is in scope.
    const scoped = { ...campaign, inScope: (urls: string[]) => Promise.resolve(urls.map((u) => new URL(u).hostname === 'own.test')) } as CampaignRuntime;
    const embed = (url: string, hops: string): Candidate => ({ url, depth: 1, kind: 'embed', hops });
    const r = await routeCandidates(
      rt,
      scoped,
      'own.test',
      'http://own.test/deep',
      [
        embed('http://own.test/a.css', 'LE'),
        embed('http://cdn.test/b.css', 'LE'),
        embed('http://fonts.test/f.woff2', 'LEE'),
        // Three embed hops: outside the scope, the chain ends; inside, it goes on to MAX_EMBED_HOPS_IN_SCOPE.
        embed('http://fonts.test/too-far.woff2', 'LEEE'),
        embed('http://own.test/c.css', 'LEEEE'),
        embed('http://own.test/d.css', 'LEEEEE'),
        // Links past maxDepth or the cap, or out of scope, are dropped as ever.
        { url: 'http://own.test/l/1', depth: 2 },
        { url: 'http://own.test/l/2', depth: 1 },
        { url: 'http://own.test/l/3', depth: 1 },
        { url: 'http://own.test/l/4', depth: 1 },
        { url: 'http://cdn.test/page', depth: 1 },
      ],
      async () => {},
      { maxLinks: 2, ownHostBudgetLeft: 0 },
    );
    // A host at its page budget still takes its pages' embeds.
    expect(r.own.map((i) => i.url)).toEqual(['http://own.test/a.css', 'http://own.test/c.css']);
    expect(r.own[0]).toMatchObject({ kind: 'embed', hops: 'LE', depth: 1 });
    expect(r.linksDropped).toBe(3);
    expect(await new Frontier(redis, campaign.key, 'cdn.test').size()).toBe(1);
    expect((await new Frontier(redis, campaign.key, 'cdn.test').peek())!).toMatchObject({ url: 'http://cdn.test/b.css', kind: 'embed', hops: 'LE' });
    expect(await new Frontier(redis, campaign.key, 'fonts.test').size()).toBe(1);
  });

  it('holds links and their redirects to scope.include, and every URL, requisites and sitemaps included, to scope.exclude', async () => {
    const { rt, campaign } = runtimes({}, { include: ['/docs/'], exclude: ['/ads/', '/private/'] });
    const r = await routeCandidates(
      rt,
      campaign,
      'own.test',
      'http://own.test/docs/',
      [
        { url: 'http://own.test/docs/a', depth: 1, hops: 'L' },
        { url: 'http://own.test/blog/b', depth: 1, hops: 'L' },
        { url: 'http://own.test/docs/private/c', depth: 1, hops: 'L' },
        // An include must not cost a page its stylesheet; an exclude of ads holds requisites too.
        { url: 'http://own.test/static/site.css', depth: 1, kind: 'embed', hops: 'E' },
        { url: 'http://own.test/ads/banner.png', depth: 1, kind: 'embed', hops: 'E' },
        { url: 'http://own.test/sitemap-2.xml', depth: 0, kind: 'sitemap-child', hops: 'P' },
        // A seed's redirect is still the entry point; a link's redirect is a link.
        { url: 'http://own.test/en/', depth: 0, hops: 'R' },
        { url: 'http://own.test/moved', depth: 1, hops: 'LR' },
      ],
      async () => {},
    );
    expect(r.own.map((i) => i.url).sort()).toEqual(['http://own.test/docs/a', 'http://own.test/en/', 'http://own.test/sitemap-2.xml', 'http://own.test/static/site.css']);
    expect(r.rejectedLinks?.counts).toEqual({ NOT_INCLUDED: 2, EXCLUDED: 2 });
  });
});

describe('a robots.txt listing 5,000 sitemaps that all 404', () => {
  let h: Harness;
  const HOST = 'maps.flood.test';
  const MAX_SITEMAPS = 5;
  beforeAll(async () => {
    h = await createHarness('sitemap-flood', { workers: 1 });
    const lines = Array.from({ length: 5000 }, (_, i) => `Sitemap: ${h.web.url(HOST, `/maps/${i}.xml`)}`);
    h.web.addSite({ host: HOST, pages: 30, fanOut: 3, robots: { raw: `User-agent: *\nAllow: /\n${lines.join('\n')}\n` } });
  });
  afterAll(() => h?.close());

  it('requests the first maxSitemapsPerHost of them only, and the 10-page campaign ends on its budget', async () => {
    const handle = await launch(h, {
      seeds: [h.web.url(HOST, '/')],
      budgets: { maxPages: 10, maxSitemapsPerHost: MAX_SITEMAPS },
      politeness: { minDelayMs: 20 },
    });
    const result = await handle.result();
    expect(result.status).toBe('budget-exhausted');
    const maps = h.web
      .requests()
      .filter((r) => r.host === HOST && (r.path.startsWith('/maps/') || r.path === '/sitemap.xml'))
      .map((r) => r.path);
    // Sitemaps wait at the seed's depth, ahead of its links: the first ones robots.txt lists, each once, and no more.
    expect(maps).toEqual(Array.from({ length: MAX_SITEMAPS }, (_, i) => `/maps/${i}.xml`));
    const index = await outputOf(h, result.campaignId).index();
    expect(index.filter((e) => e.kind === 'sitemap').length).toBeLessThanOrEqual(MAX_SITEMAPS);
  });
});
