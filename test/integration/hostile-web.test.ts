// One campaign over every misbehaving site of the test web (redirect loops,
// a calendar trap, slow and broken bodies, robots.txt garbage / 10 MB / 500,
// sitemaps and a sitemap bomb, foreign charsets, 429 and 503, session ids
// and duplicates, overlong links, links into private address space). The
// crawl must finish, and the request log and the output must show each
// behaviour docs/crawling-rules.md promises.
import fs from 'node:fs';
import path from 'node:path';
import type { IndexEntry } from '../../src/storage/index-writer';
import { normalizeUrl } from '../../src/url/normalize';
import { allHostileSites, canonicalTarget, checkRequestLog, METADATA_URL, PRIVATE_ADMIN_URL, type HostileSite } from '../web/hostile-sites';
import type { RequestRecord } from '../web/test-web';
import { createHarness, launch, outputOf, type Harness } from '../support/harness';
import { ensurePythonWarcio, readWithWarcio } from '../support/warcio';

const DELAY_MS = 100;
const MAX_BODY = 2 * 1024 * 1024;
const HOST_BUDGET = 30;

let h: Harness;
let sites: HostileSite[];
let reqs: RequestRecord[];
let index: IndexEntry[];
let result: Awaited<ReturnType<Awaited<ReturnType<typeof launch>>['result']>>;
let outDir: string;

const site = (kind: string) => sites.find((s) => s.host.startsWith(`${kind}.`))!;
const urlOn = (s: HostileSite, target: string) => normalizeUrl(h.web.url(s.host, target));
const entryFor = (s: HostileSite, target: string) => index.find((e) => e.url === urlOn(s, target));
const requestsTo = (s: HostileSite) => reqs.filter((r) => r.host === s.host);

beforeAll(async () => {
  h = await createHarness('hostile', { workers: 2 });
  sites = allHostileSites();
  for (const s of sites) h.web.addSite(s);
  await ensurePythonWarcio();
  const handle = await launch(h, {
    seeds: sites.flatMap((s) => s.expected.seeds.map((p) => h.web.url(s.host, p))),
    // Anywhere: so links into 10.0.0.0/8 and 169.254.169.254 are in scope and must be refused by the address policy.
    scope: { mode: 'any' },
    budgets: { maxPagesPerHost: HOST_BUDGET },
    politeness: { minDelayMs: DELAY_MS },
    fetch: { headersTimeoutMs: 2_000, bodyTimeoutMs: 2_000, totalTimeoutMs: 4_000, maxBodyBytes: MAX_BODY, maxRetries: 2 },
    idleCloseMs: 2_000,
  });
  result = await handle.result();
  reqs = h.web.requests();
  index = await outputOf(h, result.campaignId).index();
  outDir = outputOf(h, result.campaignId).dir;
}, 400_000);

afterAll(async () => {
  await h?.close();
});

test('the campaign completes and every site gets what its expectation demands in the request log', () => {
  expect(result.status).toBe('completed');
  const problems = Object.fromEntries(sites.map((s) => [s.host, checkRequestLog(s, reqs)]));
  expect(problems).toEqual(Object.fromEntries(sites.map((s) => [s.host, []])));
});

test('every index entry has a typed outcome, and failures carry an error code', () => {
  for (const e of index) {
    expect(typeof e.outcome).toBe('string');
    if (e.outcome === 'error' || e.outcome === 'refused') expect({ url: e.url, code: typeof e.error?.code }).toEqual({ url: e.url, code: 'string' });
  }
  // Each URL is recorded once.
  const urls = index.map((e) => e.url);
  expect(urls.length).toBe(new Set(urls).size);
});

test('index verdicts match each site\'s expectation', () => {
  const wrong: string[] = [];
  for (const s of sites) {
    for (const [target, v] of Object.entries(s.expected.index)) {
      const e = entryFor(s, target);
      // A duplicate is a fetched page whose body matched an earlier one.
      const outcome = e?.outcome === 'duplicate' ? 'fetched' : e?.outcome;
      if (!e || !v.outcomes.includes(outcome!)) wrong.push(`${s.host}${target}: ${e?.outcome ?? 'not in index'} not in ${v.outcomes.join('|')}`);
      else if (e.outcome === 'error' && v.errorCodes && !v.errorCodes.includes(e.error!.code)) wrong.push(`${s.host}${target}: ${e.error!.code} not in ${v.errorCodes.join('|')}`);
      else if (v.status !== undefined && e.outcome === 'fetched' && e.status !== v.status) wrong.push(`${s.host}${target}: status ${e.status}`);
    }
  }
  expect(wrong).toEqual([]);
});

test('redirects: loops and long chains end typed, cross-host targets go to their own host, private targets are refused', () => {
  const r = site('redirects');
  expect(entryFor(r, '/loop/a')?.error?.code).toMatch(/^(REDIRECT_LOOP|TOO_MANY_REDIRECTS)$/);
  expect(entryFor(r, '/chain/0')?.error?.code).toBe('TOO_MANY_REDIRECTS');
  // The chain's hops were followed (and stored in the entry), not re-queued one by one.
  expect(requestsTo(r).filter((q) => q.path === '/chain/0').length).toBe(1);
  for (const target of [METADATA_URL, PRIVATE_ADMIN_URL]) {
    const e = index.find((x) => x.url === normalizeUrl(target));
    expect({ target, outcome: e?.outcome, code: e?.error?.code }).toEqual({ target, outcome: 'refused', code: 'ADDRESS_REFUSED' });
  }
});

test('spider traps: the calendar host stops at its page budget; overlong and parameter-heavy links are rejected with a reason', () => {
  const t = site('traps');
  const pages = requestsTo(t).filter((q) => q.path !== '/robots.txt' && q.path !== '/sitemap.xml');
  expect(pages.length).toBeLessThanOrEqual(HOST_BUDGET);
  expect(index.some((e) => e.host.startsWith(t.host) && e.outcome === 'host-budget-exhausted')).toBe(true);

  const l = site('long-links');
  expect(entryFor(l, '/long-link')?.rejectedLinks?.counts.URL_TOO_LONG).toBeGreaterThanOrEqual(1);
  const sample = entryFor(l, '/long-link')!.rejectedLinks!.samples[0];
  expect(sample.length).toBeGreaterThan(100_000);
  expect(sample.url.length).toBeLessThanOrEqual(200);
  expect(entryFor(l, '/many-params')?.rejectedLinks?.counts.TOO_MANY_QUERY_PARAMS).toBe(1);
  // The canonical of the variants is recorded.
  for (const v of l.expected.groups.canonicalVariants) expect(entryFor(l, v)?.canonical).toBe(urlOn(l, '/canonical/main'));
});

test('faults: timeouts, resets and truncation are typed errors; huge bodies stop at the size cap', () => {
  const f = site('faults');
  for (const target of ['/huge', '/huge-chunked']) {
    const e = entryFor(f, target)!;
    // The two huge pages are cut at the same bytes, so the second may be recorded as a duplicate of the first.
    expect({ target, stored: ['fetched', 'duplicate'].includes(e.outcome), truncated: e.truncated, capped: e.bytes <= MAX_BODY }).toEqual({ target, stored: true, truncated: 'length', capped: true });
  }
  const bomb = entryFor(f, '/gzip-bomb')!;
  expect(bomb.bytes).toBeLessThanOrEqual(MAX_BODY);
  // No fault was retried forever: at most 1 + maxRetries requests per path.
  const perPath = new Map<string, number>();
  for (const q of requestsTo(f)) perPath.set(q.path, (perPath.get(q.path) ?? 0) + 1);
  for (const [p, n] of perPath) expect({ p, ok: n <= 3 }).toEqual({ p, ok: true });
});

test('robots.txt: garbage allows all, a 10 MB file is cut and still obeyed, a 500 keeps every page unfetched and recorded', () => {
  const e500 = site('robots-500');
  const seedEntry = entryFor(e500, '/');
  expect(seedEntry?.outcome).toBe('robots-unavailable');
  expect(requestsTo(e500).every((q) => q.path === '/robots.txt')).toBe(true);
  // Retried with back-off, not hammered.
  expect(requestsTo(e500).length).toBeLessThanOrEqual(3);
});

test('sitemaps: robots.txt Sitemap lines, the index and its gzipped urlset are read; the bomb is cut', () => {
  const sm = site('sitemaps');
  for (const target of sm.expected.groups.sitemapOnly) expect({ target, outcome: entryFor(sm, target)?.outcome }).toEqual({ target, outcome: 'fetched' });
  const bomb = index.find((e) => e.url.endsWith('/sitemaps/bomb.xml.gz'))!;
  expect(bomb.kind).toBe('sitemap-child');
  expect(bomb.bytes).toBeLessThanOrEqual(MAX_BODY);
  const root = entryFor(sm, '/sitemap_index.xml')!;
  expect(root.sitemap?.kind).toBe('sitemapindex');
});

test('charsets: Shift_JIS, windows-1251 and BOM pages are decoded, so their non-ASCII links resolve', () => {
  const c = site('charsets');
  for (const target of c.expected.groups.targets) expect({ target, status: entryFor(c, target)?.status }).toEqual({ target, status: 200 });
});

test('429 with Retry-After pauses the whole host; 503s are retried with back-off, then fetched', () => {
  const t = site('throttled');
  // The site answers 429 to its first page requests (robots.txt aside).
  const times = requestsTo(t).filter((q) => q.path !== '/robots.txt').map((q) => q.t).sort((a, b) => a - b);
  const limited = Number(t.expected.groups.throttledRequests[0]);
  const retryAfterMs = Number(t.expected.groups.retryAfterMs[0]);
  // Every request that got a 429 is followed by Retry-After of silence.
  for (let i = 1; i <= limited; i++) expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(retryAfterMs);
  // …and the throttled URL was not given up: 429s do not use up its retries.
  expect(entryFor(t, '/')).toMatchObject({ outcome: 'fetched', status: 200 });
  const u = site('unavailable');
  for (const target of ['/', '/page/1', '/page/2']) {
    expect({ target, n: requestsTo(u).filter((q) => canonicalTarget(q.path) === target).length }).toEqual({ target, n: 3 });
  }
});

test('duplicates: session ids are normalised away; exact and near-duplicate pages are recorded as such', () => {
  const d = site('duplicates');
  const itemRequests = requestsTo(d).filter((q) => q.path.startsWith('/item'));
  expect(itemRequests.map((q) => q.path).sort()).toEqual(d.expected.groups.canonicalItems.slice().sort());
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
  // Duplicates are not expanded: links of a duplicate page are the original's.
  expect(copies.every((e) => e.outcome === 'duplicate')).toBe(true);
});

test('content: PDF and PNG are stored but never parsed for links', () => {
  const c = site('content');
  expect(entryFor(c, '/doc.pdf')?.contentType).toMatch(/application\/pdf/);
  expect(entryFor(c, '/doc.pdf')?.warc).toBeDefined();
});

test('every WARC record reads back through Python warcio with valid digests, with a metadata record per exchange', () => {
  const dir = path.join(outDir, 'warc');
  const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
  const records = readWithWarcio(files);
  const bad = records.filter((r) => r.passed === false || r.problems.length > 0);
  expect(bad).toEqual([]);
  const responses = records.filter((r) => r.type === 'response');
  const stored = index.filter((e) => e.warc);
  expect(responses.length).toBe(stored.length);
  expect(records.filter((r) => r.type === 'request').length).toBe(stored.length);
  expect(records.filter((r) => r.type === 'metadata').length).toBe(stored.length);
  expect(records.filter((r) => r.type === 'warcinfo').length).toBe(files.length);
});
