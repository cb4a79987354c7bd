// Two campaigns crawl the same hosts at the same time with 3 workers: the
// per-host clock in Redis is shared by every worker and every campaign, so
// no host ever sees two requests closer than its delay.
import { createHarness, launch, minGapsByHost, pageRequests, urlOf, type Harness } from '../support/harness';

const DELAY_MS = 300;
let h: Harness;

beforeAll(async () => {
  h = await createHarness('shared-politeness', { workers: 3 });
  for (let i = 0; i < 4; i++) h.web.addSite({ host: `p${i}.shared.test`, pages: 8, fanOut: 2 });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

test("two concurrent campaigns on the same hosts never exceed one host's rate", async () => {
  const seeds = h.web.hosts().map((host) => h.web.url(host, '/'));
  const [a, b] = await Promise.all([launch(h, { seeds, politeness: { minDelayMs: DELAY_MS } }), launch(h, { seeds, politeness: { minDelayMs: DELAY_MS } })]);
  const [ra, rb] = await Promise.all([a.result(), b.result()]);
  expect([ra.status, rb.status]).toEqual(['completed', 'completed']);
  const expected = h.web.expectedPages(seeds);
  expect(ra.pages).toBe(expected.size);
  expect(rb.pages).toBe(expected.size);

  const reqs = h.web.requests();
  // Each campaign fetched every page once: every page twice in all.
  const counts = new Map<string, number>();
  for (const r of pageRequests(reqs)) counts.set(urlOf(h, r), (counts.get(urlOf(h, r)) ?? 0) + 1);
  expect([...counts.values()].every((n) => n === 2)).toBe(true);
  expect(counts.size).toBe(expected.size);
  // All requests to a host, both campaigns and robots.txt included, keep the host's spacing.
  for (const [host, gap] of minGapsByHost(reqs)) expect({ host, ok: gap >= DELAY_MS }).toEqual({ host, ok: true });
}, 300_000);
