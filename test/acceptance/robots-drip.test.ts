// robots.txt on the real web: a file that drips for 40 s never holds its
// host (or a session) that long: it misses robots.txt's own deadline, is tried
// a bounded number of times with durable back-offs, and the host then ends
// robots-unavailable (RFC 9309) with every URL recorded, while other hosts
// crawl on. A robots.txt redirected to another host takes that host's clock,
// and so does every hop of the redirect chains of a site at the same 1 s delay.
import { redirectSite } from '../web/hostile-sites';
import { generateSites } from '../web/test-web';
import { createHarness, launch, minGapsByHost, outputOf, pageRequests, type Harness } from '../support/harness';

jest.setTimeout(240_000);
const DELAY_MS = 1_000;
const REDIRECTS = 'chains.robots.test';

let h: Harness;
beforeAll(async () => {
  h = await createHarness('robots-drip', { workers: 1 });
  for (const spec of generateSites({ count: 1, pages: 4, fanOut: 2, crossPerPage: 0, hostPattern: () => 'drip.robots.test', seed: 1 })) {
    h.web.addSite({
      ...spec,
      // One byte every 200 ms for 40 s.
      handler: (ctx) => {
        if (ctx.path !== '/robots.txt') return false;
        ctx.res.writeHead(200, { 'content-type': 'text/plain' });
        let n = 0;
        const drip = () => {
          if (ctx.res.destroyed) return;
          if (++n > 200) return void ctx.res.end('\n');
          ctx.res.write(n === 1 ? 'U' : ' ');
          ctx.later(200, drip);
        };
        drip();
        return true;
      },
    });
  }
  for (const spec of generateSites({ count: 1, pages: 3, fanOut: 2, crossPerPage: 0, hostPattern: () => 'fine.robots.test', seed: 1 })) h.web.addSite(spec);
  for (const spec of generateSites({ count: 1, pages: 3, fanOut: 2, crossPerPage: 0, hostPattern: () => 'hop.robots.test', seed: 1 })) {
    h.web.addSite({
      ...spec,
      handler: (ctx) => (ctx.path === '/robots.txt' ? (ctx.send(301, 'text/plain', 'moved', { location: `http://target.robots.test:${ctx.port}/robots.txt` }), true) : false),
    });
  }
  for (const spec of generateSites({ count: 1, pages: 6, fanOut: 2, crossPerPage: 0, hostPattern: () => 'target.robots.test', seed: 1 })) h.web.addSite(spec);
  h.web.addSite(redirectSite(REDIRECTS, { otherHost: 'target.robots.test' }));
});
afterAll(() => h?.close());

test('a robots.txt that drips for 40 s makes its host robots-unavailable after bounded attempts; the others crawl on, every request under its host clock', async () => {
  const hosts = ['drip.robots.test', 'fine.robots.test', 'hop.robots.test', 'target.robots.test', REDIRECTS];
  const handle = await launch(h, {
    seeds: hosts.map((x) => h.web.url(x, '/')),
    scope: { mode: 'same-host' },
    politeness: { minDelayMs: DELAY_MS },
    sitemaps: 'off',
    fetch: { robotsTimeoutMs: 2_000 },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const reqs = h.web.requests();
  // Three attempts at the dripping file, no page of its host.
  expect(reqs.filter((r) => r.host === 'drip.robots.test').map((r) => r.path)).toEqual(['/robots.txt', '/robots.txt', '/robots.txt']);
  const index = await outputOf(h, handle.workflowId).index();
  const drip = index.filter((e) => e.host.startsWith('drip.robots.test'));
  expect(drip).toEqual([expect.objectContaining({ outcome: 'robots-unavailable', error: expect.objectContaining({ code: 'ROBOTS_TIMEOUT' }) })]);
  // The others were crawled in full.
  for (const x of ['fine.robots.test', 'hop.robots.test', 'target.robots.test']) {
    expect(
      new Set(
        pageRequests(reqs)
          .filter((r) => r.host === x)
          .map((r) => r.path),
      ),
    ).toEqual(new Set([...h.web.expectedPages([h.web.url(x, '/')], { hosts: [x] })].map((u) => new URL(u).pathname)));
  }
  // hop.robots.test's robots.txt was fetched from target.robots.test: that request too kept target's delay.
  expect(reqs.filter((r) => r.host === 'target.robots.test' && r.path === '/robots.txt').length).toBeGreaterThanOrEqual(2);
  // The redirect chains: every hop a request of its own, each once, the short chain followed to its page.
  const chains = reqs.filter((r) => r.host === REDIRECTS).map((r) => r.path);
  expect(chains.filter((p) => p.startsWith('/short/'))).toEqual(['/short/0', '/short/1', '/short/2', '/short/3']);
  expect(chains.filter((p) => p.startsWith('/chain/')).length).toBe(6);
  expect(chains.length).toBe(new Set(chains).size);
  expect(index.find((e) => e.url === h.web.url(REDIRECTS, '/short/3'))).toMatchObject({ outcome: 'fetched', status: 200 });
  // No two requests to one host (robots.txt, pages, redirect hops) closer than the delay.
  const gaps = minGapsByHost(reqs);
  expect(gaps.get(REDIRECTS)).toBeDefined();
  for (const [host, gap] of gaps) if (host !== 'drip.robots.test') expect({ host, gap: gap >= DELAY_MS }).toEqual({ host, gap: true });
});
