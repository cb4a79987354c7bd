// Campaigns over every misbehaving site of the test web (redirect loops and
// chains, a calendar trap, slow and broken bodies, HTTP error statuses,
// robots.txt garbage / 10 MB / 500 / 404 / 429, sitemaps and a sitemap bomb,
// foreign charsets, 429 and 503, session ids and duplicates, overlong links,
// links into private address space). The main campaign crawls them with
// default content settings; a second one crawls copies of three sites with
// the settings whose effect they show (max depth, expanded duplicates,
// non-HTML skipped); a third one, without robots.txt, meets failures that
// would otherwise hide behind an unreachable robots.txt (DNS, TLS, connect
// timeout). The crawls must finish, and the request log and the output must
// show each behaviour docs/crawling-rules.md promises.
import { OUTCOME } from '../../activities/pipeline/outcome';
import fs from 'node:fs';
import path from 'node:path';
import type { CampaignInput } from '../../src/config/campaign';
import { parseResolveEntries } from '../../src/http/resolve-overrides';
import { ROBOTS_TTL_MS, robotsCacheKey, robotsSource } from '../../src/robots/robots-store';
import type { IndexEntry } from '../../src/storage/index-writer';
import { hostKey, normalizeUrl } from '../../src/url/normalize';
import type { CampaignResult } from '../../workflows/messages';
import {
  allHostileSites,
  calendarTrapSite,
  canonicalTarget,
  checkRequestLog,
  contentSite,
  duplicateSite,
  FAULT_PATHS,
  METADATA_URL,
  PRIVATE_ADMIN_URL,
  type HostileSite,
} from '../web/hostile-sites';
import { selfSignedCertificate, type RequestRecord } from '../web/test-web';
import { createHarness, isHousekeepingPath, launch, outputOf, type Harness } from '../support/harness';
import { ensurePythonWarcio, readExchangesWithWarcio, readWithWarcio, type PyRecord } from '../support/warcio';

const DELAY_MS = 100;
const MAX_BODY = 2 * 1024 * 1024;
const HOST_BUDGET = 30;
const MAX_RETRIES = 2;
const MAX_DEPTH = 2;

/** Every outcome the page pipeline writes to the index (activities/pipeline/outcome.ts). */
const OUTCOMES = new Set<string>(Object.values(OUTCOME));
/** Outcomes where the URL failed or was given up: the index must say why. */
const WITH_ERROR_CODE = new Set(['http-error', 'error', 'refused', 'robots-unavailable', 'host-budget-exhausted']);

// Failure taxonomy hosts. The unresolvable name sits under the reserved
// .invalid TLD and has a 69-character label: DNS labels stop at 63 octets, so
// the system resolver rejects it without sending a query.
const TLS_HOST = 'tls.taxonomy.test';
const TIMEOUT_HOST = 'connect-timeout.taxonomy.test';
const NXDOMAIN_HOST = `nxdomain-${'x'.repeat(60)}.invalid`;

interface Crawl {
  result: CampaignResult;
  index: IndexEntry[];
  dir: string;
}

let h: Harness;
let sites: HostileSite[];
let variantSites: { depth: ReturnType<typeof calendarTrapSite>; duplicates: HostileSite; content: HostileSite };
let reqs: RequestRecord[];
let main: Crawl;
let variant: Crawl;
let taxonomy: Crawl;
let robotsUnreachable: Crawl;
let taxonomyUrls: { tls: string; dns: string; timeout: string };
let robotsCache: { pttlMs: number; followUp: RequestRecord[] };

const site = (kind: string) => sites.find((s) => s.host.startsWith(`${kind}.`))!;
const urlOn = (s: HostileSite, target: string) => normalizeUrl(h.web.url(s.host, target));
const entryIn = (c: Crawl, s: HostileSite, target: string) => c.index.find((e) => e.url === urlOn(s, target));
const entryFor = (s: HostileSite, target: string) => entryIn(main, s, target);
const requestsTo = (s: HostileSite) => reqs.filter((r) => r.host === s.host);
const countOf = (s: HostileSite, target: string) => requestsTo(s).filter((q) => canonicalTarget(q.path) === canonicalTarget(target)).length;

async function crawl(input: Omit<CampaignInput, 'output'>): Promise<Crawl> {
  const result = await (await launch(h, input)).result();
  const out = outputOf(h, result.campaignId);
  return { result, index: await out.index(), dir: out.dir };
}

beforeAll(async () => {
  h = await createHarness('hostile', { workers: 2 });
  sites = allHostileSites();
  for (const s of sites) h.web.addSite(s);
  variantSites = {
    depth: calendarTrapSite('depth.variants.test'),
    duplicates: duplicateSite('duplicates.variants.test'),
    content: contentSite('content.variants.test', { nonHtml: 'skip' }),
  };
  for (const s of Object.values(variantSites)) h.web.addSite(s);
  // A real site behind the certificate, so a crawler that ignored the TLS error would fetch a page.
  h.web.addSite({ host: TLS_HOST, pages: 1, fanOut: 0 });
  const httpsPort = await h.web.startHttps(await selfSignedCertificate([TLS_HOST]));
  const timeoutPort = await h.web.startUnacceptingListener();
  taxonomyUrls = {
    tls: normalizeUrl(`https://${TLS_HOST}:${httpsPort}/`),
    dns: normalizeUrl(`http://${NXDOMAIN_HOST}/`),
    timeout: normalizeUrl(`http://${TIMEOUT_HOST}:${timeoutPort}/`),
  };
  await ensurePythonWarcio();

  const fetch = { headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000, totalTimeoutMs: 4_000, maxBodyBytes: MAX_BODY, maxRetries: MAX_RETRIES };
  [main, variant, taxonomy, robotsUnreachable] = await Promise.all([
    crawl({
      seeds: sites.flatMap((s) => s.expected.seeds.map((p) => h.web.url(s.host, p))),
      // Anywhere: so links into 10.0.0.0/8 and 169.254.169.254 are in scope and must be refused by the address policy.
      scope: { mode: 'any' },
      budgets: { maxPagesPerHost: HOST_BUDGET },
      politeness: { minDelayMs: DELAY_MS },
      fetch,
    }),
    crawl({
      seeds: Object.values(variantSites).flatMap((s) => s.expected.seeds.map((p) => h.web.url(s.host, p))),
      budgets: { maxPagesPerHost: HOST_BUDGET, maxDepth: MAX_DEPTH },
      politeness: { minDelayMs: DELAY_MS },
      content: { nonHtml: 'skip' },
      fetch,
    }),
    crawl({
      seeds: Object.values(taxonomyUrls),
      scope: { mode: 'any' },
      // With robots.txt respected, its fetch fails first with the same error and
      // every URL of the host is recorded robots-unavailable (RFC 9309), which
      // would hide the typed failure of the page itself.
      politeness: { minDelayMs: DELAY_MS, respectRobots: false },
      fetch: {
        resolve: [...h.web.resolveArgs(), `${TLS_HOST}:${httpsPort}:${h.web.address}`, `${TIMEOUT_HOST}:${timeoutPort}:${h.web.address}`],
        connectTimeoutMs: 1_000,
        maxRetries: 1,
      },
    }),
    // The unresolvable host again, robots.txt respected: the robots fetch
    // fails first, and its cause is what the URL is recorded with.
    crawl({ seeds: [taxonomyUrls.dns], scope: { mode: 'any' }, politeness: { minDelayMs: DELAY_MS }, fetch: { maxRetries: 1 } }),
  ]);

  // robots.txt of a host the main campaign crawled is in the shared cache; a
  // later campaign on that host must use it instead of asking again.
  const garbageHost = hostKey(h.web.url(site('robots-garbage').host));
  const pttlMs = await h.redis.pttl(robotsCacheKey(robotsSource(`http://${garbageHost}/robots.txt`, parseResolveEntries(h.web.resolveArgs()))));
  const before = h.web.requests().length;
  await crawl({ seeds: [h.web.url(site('robots-garbage').host, '/')], budgets: { maxPages: 1 }, politeness: { minDelayMs: DELAY_MS } });
  robotsCache = {
    pttlMs,
    followUp: h.web
      .requests()
      .slice(before)
      .filter((r) => r.host === site('robots-garbage').host),
  };
  reqs = h.web.requests();
}, 400_000);

afterAll(async () => {
  await h?.close();
});

test('the campaigns complete and every site gets what its expectation demands in the request log', () => {
  expect([main, variant, taxonomy, robotsUnreachable].map((c) => c.result.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
  const all = [...sites, ...Object.values(variantSites)];
  const problems = Object.fromEntries(all.map((s) => [s.host, checkRequestLog(s, reqs)]));
  expect(problems).toEqual(Object.fromEntries(all.map((s) => [s.host, []])));
});

test('every index entry has an outcome the crawler defines; failures carry an error code that fits them', () => {
  const wrong: string[] = [];
  for (const c of [main, variant, taxonomy, robotsUnreachable]) {
    for (const e of c.index) {
      if (!OUTCOMES.has(e.outcome)) wrong.push(`${e.url}: unknown outcome ${e.outcome}`);
      const code = e.error?.code;
      if (WITH_ERROR_CODE.has(e.outcome) && !(typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code))) wrong.push(`${e.url}: ${e.outcome} without error code`);
      if (e.outcome === 'http-error' && !(typeof e.status === 'number' && e.status >= 400 && code === `HTTP_${e.status}`))
        wrong.push(`${e.url}: http-error ${e.status} with ${code}`);
      if (e.outcome === 'refused' && code !== 'ADDRESS_REFUSED') wrong.push(`${e.url}: refused with ${code}`);
      if (e.outcome === 'fetched' && (e.error || e.status === null || e.status >= 400)) wrong.push(`${e.url}: fetched with status ${e.status}, error ${code}`);
    }
    // Each URL is recorded once per campaign.
    const urls = c.index.map((e) => e.url);
    expect(urls.length).toBe(new Set(urls).size);
  }
  expect(wrong).toEqual([]);
  // These failures did occur, so the checks above were not vacuous.
  const seen = new Set([main, variant, taxonomy].flatMap((c) => c.index.map((e) => e.outcome)));
  expect((['http-error', 'error', 'refused', 'host-budget-exhausted'] as const).filter((o) => !seen.has(o))).toEqual([]);
});

test("index verdicts match each site's expectation", () => {
  const wrong: string[] = [];
  const check = (c: Crawl, s: HostileSite) => {
    for (const [target, v] of Object.entries(s.expected.index)) {
      const e = entryIn(c, s, target);
      // A duplicate is a fetched page whose body matched an earlier one.
      const outcome = e?.outcome === 'duplicate' ? 'fetched' : e?.outcome;
      if (!e || !v.outcomes.includes(outcome!)) wrong.push(`${s.host}${target}: ${e?.outcome ?? 'not in index'} not in ${v.outcomes.join('|')}`);
      else if ((e.outcome === 'error' || e.outcome === 'http-error') && v.errorCodes && !v.errorCodes.includes(e.error!.code)) {
        wrong.push(`${s.host}${target}: ${e.error!.code} not in ${v.errorCodes.join('|')}`);
      } else if (v.status !== undefined && e.status !== null && e.status !== v.status) wrong.push(`${s.host}${target}: status ${e.status}`);
    }
  };
  for (const s of sites) check(main, s);
  for (const s of Object.values(variantSites)) check(variant, s);
  expect(wrong).toEqual([]);
});

test('redirects: every hop its own entry under its own URL; loops end at the seen-set, long chains typed; private targets are refused', () => {
  const r = site('redirects');
  const short = r.expected.groups.shortChain;
  // Each hop requested once, indexed under its own URL with the 3xx and where it pointed; the last one is the page.
  expect(short.map((p) => countOf(r, p))).toEqual(short.map(() => 1));
  for (let i = 0; i + 1 < short.length; i++) {
    expect(entryFor(r, short[i])).toMatchObject({ outcome: 'redirect', redirectTo: h.web.url(r.host, short[i + 1]), warc: expect.any(Object) });
    expect(entryFor(r, short[i])!.status).toBeGreaterThanOrEqual(300);
  }
  expect(entryFor(r, short[short.length - 1])).toMatchObject({ outcome: 'fetched', status: 200 });

  expect([countOf(r, '/loop/a'), countOf(r, '/loop/b')]).toEqual([1, 1]);
  expect([entryFor(r, '/loop/a')?.outcome, entryFor(r, '/loop/b')?.outcome]).toEqual(['redirect', 'redirect']);
  // The default fetch.maxRedirects is 5: hops 1 to 5 are redirects, the sixth 3xx ends the chain.
  const chain = r.expected.groups.chain;
  expect(chain.slice(0, 5).map((p) => entryFor(r, p)?.outcome)).toEqual(chain.slice(0, 5).map(() => 'redirect'));
  expect(entryFor(r, chain[5])).toMatchObject({ outcome: 'error', error: { code: 'TOO_MANY_REDIRECTS' } });
  expect(countOf(r, chain[6])).toBe(0);
  for (const target of [METADATA_URL, PRIVATE_ADMIN_URL]) {
    const e = main.index.find((x) => x.url === normalizeUrl(target));
    expect({ target, outcome: e?.outcome, code: e?.error?.code }).toEqual({ target, outcome: 'refused', code: 'ADDRESS_REFUSED' });
  }
});

test("a redirect to a host nothing links to and nobody seeded hands the target to that host's own crawl", () => {
  const r = site('redirects');
  const target = site('redirect-target');
  expect(target.expected.seeds).toEqual([]);
  const away = entryFor(r, '/away')!;
  expect(away).toMatchObject({ outcome: 'redirect', status: 301 });
  expect(entryFor(target, '/')).toMatchObject({ outcome: 'fetched', status: 200, referrer: away.url, depth: away.depth });
  expect(countOf(target, '/')).toBe(1);
});

test('spider traps: the calendar host stops at its page budget; overlong and parameter-heavy links are rejected with a reason', () => {
  const t = site('traps');
  const pages = requestsTo(t).filter((q) => !isHousekeepingPath(q.path));
  expect(pages.length).toBeLessThanOrEqual(HOST_BUDGET);
  expect(main.index.some((e) => e.url.startsWith(urlOn(t, '/')) && e.outcome === 'host-budget-exhausted')).toBe(true);

  const l = site('long-links');
  expect(entryFor(l, '/long-link')?.rejectedLinks?.counts.URL_TOO_LONG).toBeGreaterThanOrEqual(1);
  const sample = entryFor(l, '/long-link')!.rejectedLinks!.samples[0];
  expect(sample.length).toBeGreaterThan(100_000);
  expect(sample.url.length).toBeLessThanOrEqual(200);
  expect(entryFor(l, '/many-params')?.rejectedLinks?.counts.TOO_MANY_QUERY_PARAMS).toBe(1);
  // The canonical of the variants is recorded.
  for (const v of l.expected.groups.canonicalVariants) expect(entryFor(l, v)?.canonical).toBe(urlOn(l, '/canonical/main'));
});

test('max depth: exactly the pages within budgets.maxDepth link hops of the seed are requested, none deeper', () => {
  const t = variantSites.depth;
  const requested = new Set(
    requestsTo(t)
      .filter((q) => !isHousekeepingPath(q.path))
      .map((q) => canonicalTarget(q.path)),
  );
  expect([...requested].sort()).toEqual([...t.reachable(MAX_DEPTH)].map(canonicalTarget).sort());
  const pages = variant.index.filter((e) => e.url.startsWith(urlOn(t, '/')) && !e.kind);
  expect(Math.max(...pages.map((e) => e.depth))).toBe(MAX_DEPTH);
});

test('faults: timeouts, resets and truncation are typed errors; huge bodies and the gzip bomb stop exactly at the size cap', () => {
  // The faults are on two hosts (allHostileSites): the timeouts and the size caps, and the network errors.
  const f = site('faults');
  const n = site('network-faults');
  expect([...f.expected.groups.faults, ...n.expected.groups.faults].sort()).toEqual([...FAULT_PATHS].sort());
  for (const target of ['/huge', '/huge-chunked', '/gzip-bomb']) {
    const e = entryFor(f, target)!;
    // The two huge pages are cut at the same bytes, so the second may be recorded as a duplicate of the first.
    expect({ target, stored: ['fetched', 'duplicate'].includes(e.outcome), truncated: e.truncated, bytes: e.bytes }).toEqual({
      target,
      stored: true,
      truncated: 'length',
      bytes: MAX_BODY,
    });
  }
  // What came before the cut is still a page: its early links are followed.
  for (const target of [...f.expected.groups.linkedFromHuge, ...f.expected.groups.linkedFromBomb]) expect({ target, n: countOf(f, target) }).toEqual({ target, n: 1 });

  // The drip never idles long enough for the body timeout; the total timeout cuts it, and what arrived is kept.
  const drip = entryFor(f, '/slow-drip')!;
  expect({ outcome: drip.outcome, truncated: drip.truncated, some: drip.bytes > 0 }).toEqual({ outcome: 'fetched', truncated: 'time', some: true });
  // Its only link comes at the very end, after the cut.
  expect(countOf(f, '/after-drip')).toBe(0);
  // A body that stops altogether trips the idle body timeout instead.
  expect(entryFor(f, '/stall')).toMatchObject({ outcome: 'error', error: { code: 'BODY_TIMEOUT' } });

  // No fault was retried forever: at most 1 + maxRetries requests per path.
  for (const s of [f, n]) {
    const perPath = new Map<string, number>();
    for (const q of requestsTo(s)) perPath.set(q.path, (perPath.get(q.path) ?? 0) + 1);
    for (const [p, count] of perPath) expect({ host: s.host, p, ok: count <= 1 + MAX_RETRIES }).toEqual({ host: s.host, p, ok: true });
  }
});

test('a final 4xx or 5xx is an http-error with its status as code, stored in WARC; 4xx is never retried, 5xx only maxRetries times', () => {
  const e = site('http-errors');
  for (const [target, status, requests] of [
    ['/missing', 404, 1],
    ['/gone', 410, 1],
    ['/down', 503, 1 + MAX_RETRIES],
  ] as const) {
    const entry = entryFor(e, target)!;
    expect({ target, outcome: entry.outcome, status: entry.status, code: entry.error?.code, stored: entry.warc !== undefined, requests: countOf(e, target) }).toEqual({
      target,
      outcome: 'http-error',
      status,
      code: `HTTP_${status}`,
      stored: true,
      requests,
    });
  }
});

test('robots.txt: garbage allows all, a 10 MB file is cut and still obeyed, a 500 keeps every page unfetched and recorded', () => {
  const e500 = site('robots-500');
  const seedEntry = entryFor(e500, '/');
  // Recorded with the cause, so an operator sees why the host was not crawled.
  expect(seedEntry).toMatchObject({ outcome: 'robots-unavailable', status: null, error: { code: 'HTTP_500' } });
  expect(requestsTo(e500).every((q) => q.path === '/robots.txt')).toBe(true);
  // Three attempts with a growing back-off (10 s, then 20 s): retried, not hammered, not dropped at once.
  const times = requestsTo(e500).map((q) => q.t);
  expect(times).toHaveLength(3);
  expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(10_000);
  expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(20_000);
});

test('an unresolvable host with robots.txt respected: its URLs are recorded robots-unavailable with the DNS failure as the code', () => {
  expect(robotsUnreachable.index.find((e) => e.url === taxonomyUrls.dns)).toMatchObject({ outcome: 'robots-unavailable', error: { code: 'DNS_FAILURE' } });
});

test('robots.txt answering 404 means no restrictions; answering 429 means nothing but robots.txt is requested', () => {
  const e404 = site('robots-404');
  const pages = Object.keys(e404.expected.index);
  expect(pages.length).toBeGreaterThan(1);
  for (const p of pages) expect({ p, outcome: entryFor(e404, p)?.outcome }).toEqual({ p, outcome: 'fetched' });
  expect(countOf(e404, '/robots.txt')).toBeGreaterThanOrEqual(1);

  const e429 = site('robots-429');
  expect(requestsTo(e429).length).toBeGreaterThanOrEqual(1);
  expect(requestsTo(e429).filter((q) => q.path !== '/robots.txt')).toEqual([]);
});

test('robots.txt is cached for 24 h across campaigns: a later campaign on the host does not fetch it again', () => {
  expect(robotsCache.pttlMs).toBeGreaterThan(ROBOTS_TTL_MS - 10 * 60_000);
  expect(robotsCache.pttlMs).toBeLessThanOrEqual(24 * 60 * 60_000);
  expect(robotsCache.followUp.map((q) => q.path)).toContain('/');
  expect(robotsCache.followUp.filter((q) => q.path === '/robots.txt')).toEqual([]);
});

test('sitemaps: robots.txt Sitemap lines, the index and its gzipped urlset are read; the bomb is cut and its head still used', () => {
  const sm = site('sitemaps');
  for (const target of sm.expected.groups.sitemapOnly) expect({ target, outcome: entryFor(sm, target)?.outcome }).toEqual({ target, outcome: 'fetched' });
  const root = entryFor(sm, '/sitemap_index.xml')!;
  expect(root.sitemap?.kind).toBe('sitemapindex');
  const bomb = entryFor(sm, '/sitemaps/bomb.xml.gz')!;
  expect(bomb.kind).toBe('sitemap-child');
  // Decompression stopped at the parse limit (truncated: 'bytes'), and the URL listed before the cut was kept and crawled.
  expect(bomb.sitemap).toMatchObject({ kind: 'urlset', urls: 1, truncated: 'bytes' });
  for (const target of sm.expected.groups.optionalFromBomb) expect({ target, outcome: entryFor(sm, target)?.outcome }).toEqual({ target, outcome: 'fetched' });
});

test('charsets: Shift_JIS, windows-1251 and BOM pages are decoded, so their non-ASCII links resolve', () => {
  const c = site('charsets');
  for (const target of c.expected.groups.targets) expect({ target, status: entryFor(c, target)?.status }).toEqual({ target, status: 200 });
});

test('429 with Retry-After pauses the whole host for at least Retry-After; 503s are retried with back-off, then fetched', () => {
  const t = site('throttled');
  const all = requestsTo(t).sort((a, b) => a.t - b.t);
  const pages = all.filter((q) => !isHousekeepingPath(q.path));
  const served = Number(t.expected.groups.servedBeforeThrottling[0]);
  const limited = Number(t.expected.groups.throttledRequests[0]);
  const retryAfterMs = Number(t.expected.groups.retryAfterMs[0]);
  const first429 = pages[served];
  const throttledPath = first429.path;
  // The 429s went to one URL, retried in place (the claim is sticky), then fetched.
  expect(pages.slice(served, served + limited + 1).map((q) => q.path)).toEqual(Array(limited + 1).fill(throttledPath));
  // Nothing at all went to the host for Retry-After after the first 429, though other pages were waiting.
  const next = all[all.indexOf(first429) + 1];
  expect(next.t - first429.t).toBeGreaterThanOrEqual(retryAfterMs);
  const waiting = pages.filter((q) => q.path !== throttledPath && q.t > first429.t && entryFor(t, q.path)?.referrer === urlOn(t, '/'));
  expect(waiting.length).toBeGreaterThanOrEqual(1);
  // More 429s than maxRetries allows, and the URL was still not given up.
  expect(limited).toBeGreaterThan(MAX_RETRIES);
  expect(entryFor(t, throttledPath)).toMatchObject({ outcome: 'fetched', status: 200 });

  const u = site('unavailable');
  for (const target of ['/', '/page/1', '/page/2']) expect({ target, n: countOf(u, target) }).toEqual({ target, n: 1 + MAX_RETRIES });
});

test('duplicates: session ids are normalised away; exact and near-duplicate pages are recorded as such, and their links still followed', () => {
  const d = site('duplicates');
  const itemRequests = requestsTo(d).filter((q) => q.path.startsWith('/item'));
  expect(itemRequests.map((q) => q.path).sort()).toEqual(d.expected.groups.canonicalItems.slice().sort());
  // The session trap (a new session id in every answer) ends after one request: the ids are stripped, /cart is seen.
  expect(
    requestsTo(d)
      .filter((q) => q.path.startsWith('/cart'))
      .map((q) => q.path),
  ).toEqual(['/cart']);
  // The news pages differ by a timestamp line: one is the original, the rest near-duplicates of it.
  const news = d.expected.groups.nearDuplicates.map((target) => entryFor(d, target)!);
  const originals = news.filter((e) => e.outcome === 'fetched');
  expect(originals.length).toBe(1);
  for (const e of news.filter((x) => x !== originals[0])) expect(e.duplicateOf).toMatchObject({ url: originals[0].url, kind: 'near' });
  // The copies are the article without that line: the first copy is a near-duplicate too,
  // and the other copies, byte for byte the same, are exact duplicates of the first.
  const copies = d.expected.groups.exactDuplicates.map((target) => entryFor(d, target)!).sort((a, b) => a.fetchedAt.localeCompare(b.fetchedAt));
  expect(copies[0].duplicateOf).toMatchObject({ url: originals[0].url, kind: 'near' });
  for (const e of copies.slice(1)) expect(e.duplicateOf).toEqual({ url: copies[0].url, kind: 'exact', distance: 0 });
  expect(copies.every((e) => e.outcome === 'duplicate')).toBe(true);
  // Only the copies link to this page: dedup never costs coverage, so it is
  // requested once, referred by a copy that is still recorded a duplicate.
  const [onlyFromCopies] = d.expected.groups.onlyFromDuplicates;
  expect(countOf(d, onlyFromCopies)).toBe(1);
  expect(copies.map((e) => e.url)).toContain(entryFor(d, onlyFromCopies)?.referrer);
  expect(entryFor(d, onlyFromCopies)?.outcome).toBe('fetched');
});

test('content: PDF and PNG are stored but never parsed for links; with nonHtml skip they are indexed only', () => {
  const c = site('content');
  expect(entryFor(c, '/doc.pdf')?.contentType).toMatch(/application\/pdf/);
  expect(entryFor(c, '/doc.pdf')?.warc).toBeDefined();
  const s = variantSites.content;
  for (const target of ['/doc.pdf', '/image.png']) {
    const e = entryIn(variant, s, target)!;
    expect({ target, outcome: e.outcome, status: e.status, warc: e.warc }).toEqual({ target, outcome: 'skipped-content-type', status: 200, warc: undefined });
    expect(countOf(s, target)).toBe(1);
  }
  const stored = warcRecords(variant)
    .filter((r) => r.type === 'response')
    .map((r) => r.uri);
  expect(stored).toContain(urlOn(s, '/'));
  expect(stored.filter((u) => u === urlOn(s, '/doc.pdf') || u === urlOn(s, '/image.png'))).toEqual([]);
});

test('failure taxonomy: an unresolvable name, an untrusted certificate and a connect that never completes end typed', () => {
  const entry = (url: string) => taxonomy.index.find((e) => e.url === url);
  expect(entry(taxonomyUrls.dns)).toMatchObject({ outcome: 'error', status: null, error: { code: 'DNS_FAILURE' } });
  expect(entry(taxonomyUrls.tls)).toMatchObject({ outcome: 'error', status: null, error: { code: 'TLS_ERROR' } });
  expect(entry(taxonomyUrls.timeout)).toMatchObject({ outcome: 'error', status: null, error: { code: 'CONNECT_TIMEOUT' } });
  // The TLS failure happened at our listener's handshake, and no HTTP request got through.
  expect(h.web.tlsFailures().filter((f) => f.servername === TLS_HOST).length).toBeGreaterThanOrEqual(1);
  expect(reqs.filter((r) => r.host === TLS_HOST)).toEqual([]);
});

const warcCache = new Map<string, { files: string[]; records: PyRecord[] }>();
function warcOf(c: Crawl): { files: string[]; records: PyRecord[] } {
  let read = warcCache.get(c.dir);
  if (!read) {
    const dir = path.join(c.dir, 'warc');
    const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
    read = { files, records: readWithWarcio(files) };
    warcCache.set(c.dir, read);
  }
  return read;
}
const warcRecords = (c: Crawl) => warcOf(c).records;

test('a redirect chain replays exactly: warcio reads one request/response pair per hop under its own URI, 3xx + Location for the hops, the page last, payload digests it recomputes', () => {
  const r = site('redirects');
  const short = r.expected.groups.shortChain;
  const records = readExchangesWithWarcio(warcOf(main).files, urlOn(r, '/short/'));
  expect(new Set(records.map((x) => x.uri))).toEqual(new Set(short.map((p) => urlOn(r, p))));
  for (const [i, p] of short.entries()) {
    const uri = urlOn(r, p);
    const responses = records.filter((x) => x.type === 'response' && x.uri === uri);
    const requests = records.filter((x) => x.type === 'request' && x.uri === uri);
    expect({ uri, responses: responses.length, requests: requests.length }).toEqual({ uri, responses: 1, requests: 1 });
    const [res, req] = [responses[0], requests[0]];
    // The pair: this hop's own request, bound to its response.
    expect(req.concurrentTo).toBe(res.id);
    expect(req.requestLine).toBe(`GET ${p} HTTP/1.1`);
    // The digest in our header is the SHA-1 of the payload warcio read, and warcio's own check passed.
    expect({ uri, digest: res.payloadDigest, passed: res.passed }).toEqual({ uri, digest: res.recomputed, passed: true });
    if (i < short.length - 1) {
      expect(Number(res.status)).toBeGreaterThanOrEqual(300);
      expect(Number(res.status)).toBeLessThan(400);
      // Location as the server sent it (absolute, root- or path-relative), resolving to the next hop.
      expect(normalizeUrl(new URL(res.location!, uri).href)).toBe(urlOn(r, short[i + 1]));
    } else {
      expect(res.status).toBe('200');
      expect(res.location).toBeNull();
      expect(res.body).toContain(`end of short chain after ${short.length - 1} hops`);
    }
  }
});

test('every WARC record reads back through Python warcio with checked digests, with a metadata record per exchange', () => {
  for (const c of [main, variant]) {
    const { files, records } = warcOf(c);
    const bad = records.filter((r) => r.passed === false || r.problems.length > 0);
    expect(bad).toEqual([]);
    const responses = records.filter((r) => r.type === 'response');
    // null would mean warcio found no digest to check.
    expect(responses.filter((r) => r.passed !== true).map((r) => r.uri)).toEqual([]);
    const stored = c.index.filter((e) => e.warc);
    // An exact copy's payload is stored once: its other exchanges are revisit records (warcio checks no digest of those).
    const revisits = records.filter((r) => r.type === 'revisit');
    expect(responses.length + revisits.length).toBe(stored.length);
    expect(revisits.length).toBe(stored.filter((e) => e.revisit).length);
    expect(records.filter((r) => r.type === 'request').length).toBe(stored.length);
    expect(records.filter((r) => r.type === 'metadata').length).toBe(stored.length);
    expect(records.filter((r) => r.type === 'warcinfo').length).toBe(files.length);
  }
  // An HTTP error's response is stored with its status.
  const missing = warcRecords(main).find((r) => r.type === 'response' && r.uri === urlOn(site('http-errors'), '/missing'));
  expect(missing?.status).toBe('404');
});
