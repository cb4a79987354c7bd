// --politeness-key: hosts that share a registrable domain (domain) or an
// address (ip) share one politeness clock; by default each host has its own.
import { createHarness, launch, minGapsByHost, pageRequests, type Harness } from '../support/harness';
import type { ServerResponse } from 'node:http';
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
  const ts = reqs
    .filter((r) => hosts.includes(r.host))
    .map((r) => r.t)
    .sort((a, b) => a - b);
  let min = Infinity;
  for (let i = 1; i < ts.length; i++) min = Math.min(min, ts[i] - ts[i - 1]);
  return min;
}

async function crawl(key: 'host' | 'domain' | 'ip', fetch: { headersTimeoutMs?: number } = {}): Promise<RequestRecord[]> {
  h.web.clearRequests();
  const handle = await launch(h, {
    seeds: h.web.hosts().map((host) => h.web.url(host, '/')),
    scope: { mode: 'any' },
    politeness: { minDelayMs: DELAY_MS, key },
    fetch,
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

/**
 * Holds the first `/` request of whichever of two hosts comes first until
 * the other host's `/` is requested, and tells whether the two were ever in
 * flight together. A host holds its clock while its request is in flight,
 * so hosts on one clock never are: the second request comes only once the
 * first has ended (here: the client gave up waiting for its headers).
 */
function watchOverlap(hostA: string, hostB: string): { overlapped: () => boolean | null; stop: () => void } {
  const held = new Map<string, { res: ServerResponse; release: () => void }>();
  let overlapped: boolean | null = null;
  const sites = [hostA, hostB].map((host) => h.web.site(host)!);
  sites.forEach((site, i) => {
    const other = [hostA, hostB][1 - i];
    site.holdUntil = (path, res) => {
      if (path !== '/' || overlapped !== null) return undefined;
      const first = held.get(other);
      if (first) {
        overlapped = !first.res.writableEnded && !first.res.destroyed;
        first.release();
        return undefined;
      }
      if (held.has(site.host)) return undefined;
      return new Promise<void>((release) => held.set(site.host, { res, release }));
    };
  });
  return {
    overlapped: () => overlapped,
    stop: () => {
      for (const site of sites) delete site.holdUntil;
      for (const { release } of held.values()) release();
    },
  };
}

test('domain: the two hosts of one registrable domain share a clock, the third keeps its own', async () => {
  const watch = watchOverlap('a.shared.test', 'c.other.test');
  let reqs: RequestRecord[];
  try {
    // A held request to the first host would otherwise hold it for the fetch's headers timeout.
    reqs = await crawl('domain', { headersTimeoutMs: 5_000 });
  } finally {
    watch.stop();
  }
  expect(minGapAcross(reqs, ['a.shared.test', 'b.shared.test'])).toBeGreaterThanOrEqual(DELAY_MS);
  for (const [, gap] of minGapsByHost(reqs)) expect(gap).toBeGreaterThanOrEqual(DELAY_MS);
  // c.other.test ran in parallel with them: a request to it came while one to a.shared.test was open.
  expect(watch.overlapped()).toBe(true);
}, 180_000);
