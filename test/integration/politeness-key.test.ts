// --politeness-key: hosts that share a registrable domain (domain) or an
// address (ip) share one politeness clock; by default each host has its own.
import { createHarness, launch, minGapsByHost, pageRequests, type Harness } from '../support/harness';
import type { RequestRecord } from '../web/test-web';

const DELAY_MS = 300;
let h: Harness;

beforeAll(async () => {
  h = await createHarness('politeness-key', { workers: 2 });
  // Every test-web host resolves to the same loopback address.
  for (const host of ['a.shared.test', 'b.shared.test', 'c.other.test']) h.web.addSite({ host, pages: 6, fanOut: 2 });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

/** Smallest gap between consecutive requests to any of these hosts, taken together. */
function minGapAcross(reqs: RequestRecord[], hosts: string[]): number {
  const ts = reqs.filter((r) => hosts.includes(r.host)).map((r) => r.t).sort((a, b) => a - b);
  let min = Infinity;
  for (let i = 1; i < ts.length; i++) min = Math.min(min, ts[i] - ts[i - 1]);
  return min;
}

async function crawl(key: 'host' | 'domain' | 'ip'): Promise<RequestRecord[]> {
  h.web.clearRequests();
  const handle = await launch(h, {
    seeds: h.web.hosts().map((host) => h.web.url(host, '/')),
    scope: { mode: 'any' },
    politeness: { minDelayMs: DELAY_MS, key },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(pageRequests(h.web.requests()).length).toBe(18);
  return h.web.requests();
}

test('ip: all three hosts (one address) share one clock', async () => {
  const reqs = await crawl('ip');
  expect(minGapAcross(reqs, h.web.hosts())).toBeGreaterThanOrEqual(DELAY_MS);
}, 180_000);

test('domain: the two hosts of one registrable domain share a clock, the third keeps its own', async () => {
  const reqs = await crawl('domain');
  expect(minGapAcross(reqs, ['a.shared.test', 'b.shared.test'])).toBeGreaterThanOrEqual(DELAY_MS);
  for (const [, gap] of minGapsByHost(reqs)) expect(gap).toBeGreaterThanOrEqual(DELAY_MS);
  // c.other.test ran in parallel with them: somewhere its requests came closer than the delay to theirs.
  expect(minGapAcross(reqs, h.web.hosts())).toBeLessThan(DELAY_MS);
}, 180_000);
