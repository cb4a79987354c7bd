// A real campaign over 10 hosts × 30 pages with cross-host links, robots.txt
// rules and two worker processes: every reachable, allowed page is fetched
// exactly once, stored once, and no host is hit faster than allowed.
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, minGapsByHost, outputOf, pageRequests, urlOf, type Harness } from '../support/harness';

jest.setTimeout(240_000);

const HOSTS = 10;
const PAGES = 30;
const MIN_DELAY_MS = 150;
// Two hosts ask for more than our minimum through robots.txt: twice and 1.7
// times as much, so a crawler that kept to the minimum would show. Their
// pages are the crawl's longest path (a host at 0.5 s took 16 s).
const SLOW = new Map([
  ['c2.complete.test', 0.3],
  ['c5.complete.test', 0.25],
]);

let h: Harness;
beforeAll(async () => {
  h = await createHarness('complete', { workers: 2 });
  for (const spec of generateSites({ count: HOSTS, pages: PAGES, fanOut: 4, crossPerPage: 1, hostPattern: (i) => `c${i}.complete.test`, seed: 7 })) {
    const delay = SLOW.get(spec.host);
    h.web.addSite({ ...spec, robots: { disallow: ['/private/'], ...(delay ? { crawlDelaySec: delay } : {}) } });
  }
});
afterAll(() => h?.close());

test('every reachable allowed page exactly once, in the index and the WARC, politely', async () => {
  const seed = h.web.url('c0.complete.test', '/');
  const handle = await launch(h, {
    seeds: [seed],
    scope: { mode: 'any' },
    politeness: { minDelayMs: MIN_DELAY_MS },
    // The default idle close (5 min): a host left waiting for a wake would stall the test.
  });
  const result = await handle.result();
  const expected = h.web.expectedPages([seed]);
  expect(expected.size).toBeGreaterThanOrEqual(HOSTS * PAGES);

  const reqs = h.web.requests();
  const pages = pageRequests(reqs).map((r) => urlOf(h, r));
  // Exactly once: no duplicates, nothing missing, nothing extra.
  expect(pages.length).toBe(new Set(pages).size);
  expect(new Set(pages)).toEqual(expected);
  // robots.txt: once per host, and no disallowed path ever requested.
  const robots = reqs.filter((r) => r.path === '/robots.txt').map((r) => r.host);
  expect(robots.sort()).toEqual([...new Set(robots)].sort());
  expect(robots.length).toBe(HOSTS);
  expect(reqs.filter((r) => r.path.startsWith('/private/'))).toEqual([]);
  // Politeness: per-host spacing never below the host's delay, across both workers.
  for (const [host, gap] of minGapsByHost(reqs)) {
    const delayMs = Math.max(MIN_DELAY_MS, (SLOW.get(host) ?? 0) * 1000);
    expect({ host, gap: gap >= delayMs }).toEqual({ host, gap: true });
  }
  // (Whether both workers ran sessions is test/integration/session-spread.test.ts's: here the
  // hosts' first sessions, all on the dispatching worker, may crawl everything.)
  expect(result.status).toBe('completed');
  expect(result.pages).toBe(expected.size);

  const out = outputOf(h, result.campaignId);
  const index = await out.index();
  const stored = fetchedUrls(index);
  expect(stored.length).toBe(expected.size);
  expect(new Set(stored)).toEqual(expected);
  // The /sitemap.xml probe (404 on these sites) is stored too, as every response is.
  const responses = (await out.warc()).filter((r) => r.type === 'response' && !r.targetUri?.endsWith('/sitemap.xml'));
  expect(
    index
      .filter((e) => e.kind === 'sitemap')
      .map((e) => [e.url, e.status, e.outcome])
      .sort(),
  ).toEqual([...new Set([...expected].map((u) => new URL(u).origin))].sort().map((o) => [`${o}/sitemap.xml`, 404, 'sitemap']));
  expect(responses.map((r) => r.targetUri).sort()).toEqual([...expected].sort());
  expect(responses.every((r) => r.blockDigestOk && r.payloadDigestOk !== false)).toBe(true);
});

test('budgets.maxPages counts page requests whatever their outcome; the URL that finds it spent gets a budget-exhausted line, URLs still queued none', async () => {
  // One host whose front page links, in this order, to a redirect, a 404, an
  // exact copy of itself and two more pages. Breadth-first, the budget of 4
  // goes to /, /r, /missing and /copy; /next/1 finds it spent.
  const host = 'budget.complete.test';
  const HTML = 'text/html; charset=utf-8';
  const home = '<!doctype html><html><body><a href="/r">r</a> <a href="/missing">m</a> <a href="/copy">c</a> <a href="/next/1">1</a> <a href="/next/2">2</a></body></html>';
  h.web.addSite({
    host,
    pages: 1,
    fanOut: 0,
    handler: (ctx) => {
      if (ctx.path === '/robots.txt' || ctx.path === '/sitemap.xml') return false;
      if (ctx.path === '/' || ctx.path === '/copy') ctx.send(200, HTML, home);
      else if (ctx.path === '/r') ctx.send(302, HTML, 'moved', { location: '/target' });
      else if (ctx.path.startsWith('/next/') || ctx.path === '/target') ctx.send(200, HTML, `<!doctype html><p>${ctx.path}</p>`);
      else ctx.send(404, 'text/plain', 'no');
      return true;
    },
  });
  const handle = await launch(h, { seeds: [h.web.url(host, '/')], scope: { mode: 'same-host' }, politeness: { minDelayMs: 50 }, budgets: { maxPages: 4 } });
  const result = await handle.result();
  expect(result.status).toBe('budget-exhausted');

  const requested = pageRequests(h.web.requests().filter((r) => r.host === host)).map((r) => r.path);
  expect(requested).toEqual(['/', '/r', '/missing', '/copy']);
  const lines = (await outputOf(h, result.campaignId).index()).filter((e) => !e.kind);
  const byPath = Object.fromEntries(lines.map((e) => [new URL(e.url).pathname, { outcome: e.outcome, code: e.error?.code ?? null }]));
  expect(byPath).toEqual({
    '/': { outcome: 'fetched', code: null },
    '/r': { outcome: 'redirect', code: null },
    '/missing': { outcome: 'http-error', code: 'HTTP_404' },
    '/copy': { outcome: 'duplicate', code: null },
    '/next/1': { outcome: 'budget-exhausted', code: 'PAGE_BUDGET' },
  });
});
