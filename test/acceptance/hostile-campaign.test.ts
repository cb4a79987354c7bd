// Issue 23's acceptance scenario: one hostile host (a robots.txt naming 5,000
// sitemaps that all 404, a page nested 400,000 deep, a page of 150,000
// links, a page that kills its worker, links to 300 subdomains served from
// the same address) and, between them, 20 ordinary pages, crawled in one
// campaign with page budgets. The campaign must finish, store every ordinary
// page, give every hostile page a typed index line, keep the campaign's
// Redis entries within a bound set by its budgets, and never have more than
// the per-address cap of requests in flight at the one server.
// Workers are real processes (the poison page kills them); a supervised pool
// starts a new one in place of each that dies.
import path from 'node:path';
import { MAX_CONTENT_BANDS } from '../../src/redis/keys';
import type { IndexEntry } from '../../src/storage/index-writer';
import { normalizeUrl } from '../../src/url/normalize';
import { campaignStatusQuery, type CampaignResult } from '../../workflows/messages';
import { POISON_PATH } from '../fixtures/handlers/poison-handler';
import { hostileHost, type HostileHost } from '../web/hostile-sites';
import type { AddressLoad, RequestRecord } from '../web/test-web';
import { createHarness, launch, outputOf, sleep, type CampaignHandle, type Harness } from '../support/harness';
import { watchFootprint, type RedisFootprint } from '../support/redis-footprint';

// The report's settings (--max-pages 400 --max-pages-per-host 60 --delay-ms
// 200), with the links-per-page and sitemap caps stated rather than left to
// their defaults, so the bounds below follow from this file alone.
const BUDGETS = { maxPages: 400, maxPagesPerHost: 60, maxLinksPerPage: 1_000, maxSitemapsPerHost: 20 };
const MIN_DELAY_MS = 200;
/** politeness.maxInFlightPerAddress: the default, stated. */
const IN_FLIGHT_CAP = 8;
/** Claims of a URL before it is recorded INTERNAL_ERROR (activities/page-attempts.ts MAX_PAGE_ATTEMPTS). */
const POISON_CLAIMS = 3;
/**
 * Bounds a hang, not a speed: with the fixes the crawl takes well under this;
 * without them it is still fetching sitemaps after six minutes, and the
 * assertions below then say what was left undone.
 */
const CAMPAIGN_DEADLINE_MS = 240_000;
/** Every response takes this long, so requests to the one address overlap as they do on the real web. */
const LATENCY_MS = 250;
const HOST = 'hostile.test';
const HANDLER = path.join(__dirname, '..', 'fixtures', 'handlers', 'poison-handler.ts');

jest.setTimeout(CAMPAIGN_DEADLINE_MS + 180_000);

interface Crawl {
  /** How waiting for the campaign ended: its result, the deadline, or a pool that gave up restarting workers. */
  end: { kind: 'done'; result: CampaignResult } | { kind: 'deadline' } | { kind: 'crash-loop'; message: string };
  index: IndexEntry[];
  /** The index lines of each URL. */
  lines: Map<string, IndexEntry[]>;
  requests: RequestRecord[];
  load: AddressLoad | undefined;
  redis: { peak: RedisFootprint; last: RedisFootprint };
  workerRestarts: number;
}

let h: Harness;
let web: HostileHost;
let crawl: Crawl;

const url = (host: string, target: string) => normalizeUrl(h.web.url(host, target));
const linesFor = (host: string, target: string) => crawl.lines.get(url(host, target)) ?? [];
const requestsTo = (host: string, match: (target: string) => boolean) => crawl.requests.filter((r) => r.host === host && match(r.path));
/** An index line, shortened to what tells its story in a failure message. */
const brief = (e: IndexEntry | undefined) =>
  e && { url: e.url, outcome: e.outcome, status: e.status, error: e.error?.code, linksDropped: (e as IndexEntry & { linksDropped?: unknown }).linksDropped };

async function campaignKeyOf(handle: CampaignHandle): Promise<string> {
  // The query answers once the campaign's first workflow task has run.
  for (let i = 0; ; i++) {
    try {
      return (await handle.query(campaignStatusQuery)).campaignKey;
    } catch (err) {
      if (i >= 60) throw err;
      await sleep(500);
    }
  }
}

async function waitForCampaign(handle: CampaignHandle): Promise<Crawl['end']> {
  let timer: NodeJS.Timeout | undefined;
  const end = await Promise.race<Crawl['end']>([
    handle.result().then((result) => ({ kind: 'done', result })),
    new Promise((resolve) => (timer = setTimeout(() => resolve({ kind: 'deadline' }), CAMPAIGN_DEADLINE_MS))),
    h.pool.failed().catch((err: Error) => ({ kind: 'crash-loop', message: err.message })),
  ]);
  clearTimeout(timer);
  if (end.kind !== 'done') {
    // Stopped so the output can be read as it stands; the tests below say what is missing.
    await handle.cancel().catch(() => undefined);
    await Promise.race([handle.result().catch(() => undefined), sleep(60_000)]);
  }
  return end;
}

beforeAll(async () => {
  // Every worker death is the poison page's; 5 restarts a worker within two minutes is more than its 3 claims need.
  h = await createHarness('hostile-campaign', { workers: 2, supervise: { maxRestarts: 5 } });
  web = hostileHost(HOST, { latencyMs: LATENCY_MS });
  h.web.addSite(web.site);
  for (const s of web.subdomainSites) h.web.addSite(s);
  const campaignId = `hostile-${process.pid}-${Date.now().toString(36)}`;
  const handle = await launch(h, {
    campaignId,
    seeds: [h.web.url(HOST, '/')],
    // The registrable domain: the subdomains are in scope, as wildcard subdomains are on the real web.
    scope: { mode: 'same-domain' },
    budgets: BUDGETS,
    politeness: { minDelayMs: MIN_DELAY_MS, maxInFlightPerAddress: IN_FLIGHT_CAP },
    handler: HANDLER,
    // launch() pins every host of the test web (hostile.test and all its subdomains) to 127.0.0.1.
  });
  const watch = watchFootprint(h.redis, await campaignKeyOf(handle), 2_000);
  const end = await waitForCampaign(handle);
  const index = await outputOf(h, campaignId).index();
  const lines = new Map<string, IndexEntry[]>();
  for (const e of index) lines.set(e.url, [...(lines.get(e.url) ?? []), e]);
  crawl = {
    end,
    index,
    lines,
    requests: h.web.requests(),
    load: h.web.load().get(h.web.address),
    redis: await watch.stop(),
    workerRestarts: h.pool.restarts,
  };
  process.stderr.write(
    `[hostile-campaign] end ${end.kind}${end.kind === 'done' ? ` (${end.result.status}, ${Math.round(end.result.durationMs / 1000)} s)` : ''}; ` +
      `${crawl.requests.length} requests, load at ${h.web.address} ${JSON.stringify(crawl.load)}; ` +
      `redis peak ${crawl.redis.peak.entries} entries in ${crawl.redis.peak.keys} keys ${JSON.stringify(crawl.redis.peak.byKind)}; ` +
      `${crawl.workerRestarts} worker(s) restarted\n`,
  );
});

afterAll(() => h?.close());

test('the campaign completes within the deadline, its budgets cutting nothing but the hostile host', () => {
  // The web holds fewer pages than maxPages (the hostile host is cut at
  // maxPagesPerHost, each subdomain has one page), so the campaign ends
  // because its frontiers are done, not because a budget stopped it:
  // which ordinary pages a campaign-wide cut drops would depend on crawl order.
  expect(crawl.end.kind === 'done' ? { kind: 'done', status: crawl.end.result.status } : crawl.end).toEqual({ kind: 'done', status: 'completed' });
});

test('every ordinary page is stored: the 20 of the hostile host and each subdomain page', () => {
  const pages: (readonly [string, string])[] = [[HOST, '/'], ...web.layout.ordinary.map((p) => [HOST, p] as const)];
  for (const s of web.subdomainSites) for (let i = 0; i < s.pages; i++) pages.push([s.host, i === 0 ? '/' : `/page/${i}`]);
  const missing = pages
    .filter(([host, target]) => !linesFor(host, target).some((e) => e.outcome === 'fetched' && e.status === 200 && e.warc))
    .map(([host, target]) => ({ url: url(host, target), lines: linesFor(host, target).map(brief) }));
  expect({ missing: missing.slice(0, 10), count: missing.length }).toEqual({ missing: [], count: 0 });
});

test('the 400,000-deep page has a typed index line and is stored', () => {
  const lines = linesFor(HOST, web.layout.deep);
  expect(lines.map(brief)).toContainEqual(expect.objectContaining({ outcome: expect.stringMatching(/^(fetched|parse-timeout)$/), status: 200 }));
  // Processing it never failed: no attempt of it ended as an error.
  expect(lines.filter((e) => e.outcome === 'error').map(brief)).toEqual([]);
});

test('the link bomb is stored with a linksDropped count, and at most maxLinksPerPage of its links reach the frontier', () => {
  const line = linesFor(HOST, web.layout.bomb).find((e) => e.outcome === 'fetched');
  expect(brief(line)).toEqual(expect.objectContaining({ outcome: 'fetched', status: 200 }));
  const dropped = (line as (IndexEntry & { linksDropped?: number }) | undefined)?.linksDropped;
  expect(dropped).toBeGreaterThanOrEqual(web.layout.bombLinks - BUDGETS.maxLinksPerPage);
  expect(dropped).toBeLessThanOrEqual(web.layout.bombLinks);
  // Every link taken ends with an index line (fetched, or cut by the host's budget); the dropped ones never do.
  // (An index line's host is the host key, port included: the URL says which host.)
  const taken = new Set(
    crawl.index
      .filter((e) => {
        const u = new URL(e.url);
        return u.hostname === HOST && web.layout.bombTarget.test(u.pathname);
      })
      .map((e) => e.url),
  );
  expect(taken.size).toBeGreaterThan(0);
  expect(taken.size).toBeLessThanOrEqual(BUDGETS.maxLinksPerPage);
  expect(requestsTo(HOST, (t) => web.layout.bombTarget.test(t)).length).toBeLessThanOrEqual(BUDGETS.maxPagesPerHost);
});

test('the page that kills its worker is recorded error INTERNAL_ERROR after at most 3 claims', () => {
  const poison = requestsTo(HOST, (t) => t === POISON_PATH);
  // It did kill: each request of it took a worker down, and the pool replaced each.
  expect(poison.length).toBeGreaterThanOrEqual(1);
  expect(crawl.workerRestarts).toBeGreaterThanOrEqual(1);
  expect(poison.length).toBeLessThanOrEqual(POISON_CLAIMS);
  expect(linesFor(HOST, POISON_PATH).map(brief)).toContainEqual(expect.objectContaining({ outcome: 'error', error: 'INTERNAL_ERROR' }));
});

test('at most maxSitemapsPerHost sitemap requests reach the server per host, each with its index line', () => {
  const isSitemap = (t: string) => t === '/sitemap.xml' || web.layout.listedSitemap.test(t);
  const perHost = new Map<string, number>();
  for (const r of crawl.requests.filter((q) => isSitemap(q.path))) perHost.set(r.host, (perHost.get(r.host) ?? 0) + 1);
  const over = [...perHost].filter(([, n]) => n > BUDGETS.maxSitemapsPerHost);
  expect({ hostile: perHost.get(HOST) ?? 0, over }).toEqual({ hostile: expect.any(Number), over: [] });
  // Some were read: the cap bounds sitemaps, it does not switch them off.
  expect(perHost.get(HOST) ?? 0).toBeGreaterThan(0);
  const requested = [...new Set(requestsTo(HOST, isSitemap).map((r) => r.path))];
  const unrecorded = requested.filter((t) => !linesFor(HOST, t).some((e) => e.outcome === 'sitemap'));
  expect(unrecorded).toEqual([]);
});

test("the campaign's Redis entries stay within the bound its budgets set", () => {
  // Every entry the campaign keeps in Redis is there for a URL it enqueued,
  // a page it fetched, or a host it met:
  // - a URL: its frontier entry, its seen-set member, its claim count and its
  //   committed attempt (4);
  // - a fetched page: its slot of the page budget and its content-index
  //   entries (verdict, exact hash, payload digest, one record per SimHash
  //   band): 4 + MAX_CONTENT_BANDS, for at most maxPages pages;
  // - a host: its record, attention, dispatch and ready entries, counters,
  //   robots.txt state and flag keys: fewer than 32;
  // - the campaign: config, control, totals, the capped problem list: < 500.
  // URLs enqueued, whatever the pages say: the home page's links, at most
  // maxLinksPerPage of the bomb's, the sitemaps robots.txt names and each
  // host's /sitemap.xml probe, and the subdomains' pages (the ordinary,
  // deep and poison pages link only to pages already counted).
  const hosts = 1 + web.subdomainSites.length;
  const urls = web.layout.homeLinks + Math.min(web.layout.bombLinks, BUDGETS.maxLinksPerPage) + web.layout.sitemaps + hosts + web.subdomainSites.reduce((n, s) => n + s.pages, 0);
  const bound = 4 * urls + (4 + MAX_CONTENT_BANDS) * BUDGETS.maxPages + 32 * hosts + 500;
  // Without a links-per-page cap the bomb alone puts 150,000 URLs in the
  // seen-set and the frontier: several times this bound.
  expect(4 * web.layout.bombLinks).toBeGreaterThan(2 * bound);
  expect(crawl.redis.peak.entries).toBeGreaterThan(0);
  expect(crawl.redis.peak.entries).toBeLessThanOrEqual(bound);
});

test('no more than maxInFlightPerAddress requests are ever in flight at the one address', () => {
  // The count is the server's own, kept at every arrival and every finished
  // response, over robots.txt, sitemaps and pages of all 301 hosts alike.
  expect(crawl.load).toBeDefined();
  expect(crawl.load!.maxInFlight).toBeGreaterThan(0);
  expect(crawl.load!.maxInFlight).toBeLessThanOrEqual(IN_FLIGHT_CAP);
});

test('connections open to the one address stay near the cap: a request sharing the address keeps no idle connection', () => {
  // Requests in flight hold the cap's slots; a connection stays open after
  // its response only when its request was alone at the address (the next
  // request of that host reuses it), so under load the sockets open are
  // the requests in flight plus the few such idle ones. Measured: 9 with a
  // cap of 8; 24 when every origin kept one idle connection per worker,
  // 415-452 with no cap at all.
  expect(crawl.load!.maxConnections).toBeLessThanOrEqual(2 * IN_FLIGHT_CAP);
});
