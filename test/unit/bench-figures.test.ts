// The benchmark judges our crawler and Crawlee by these figures alone, so
// they are checked on a request log whose answers are known.
import { embedFigures, firstTaskFigures, logFigures, politeness, politenessCeiling, redisCommandsPerPage } from '../../bench/figures';
import type { RequestRecord } from '../web/test-web';

const PORT = 8080;
const rec = (host: string, path: string, t: number): RequestRecord => ({ host, port: PORT, method: 'GET', path, userAgent: 'x', t });
const page = (host: string, path: string): string => `http://${host}:${PORT}${path}`;

const log: RequestRecord[] = [
  rec('a.test', '/robots.txt', 1000),
  rec('a.test', '/', 1100),
  rec('b.test', '/', 1500),
  rec('b.test', '/sitemap.xml', 1600),
  rec('a.test', '/page/1', 2100),
  rec('a.test', '/page/1?utm_source=x', 3100),
  rec('a.test', '/page/2', 3900),
  rec('a.test', '/private/7', 5000),
];
const expected = new Set([page('a.test', '/'), page('a.test', '/page/1'), page('a.test', '/page/2'), page('a.test', '/page/3'), page('b.test', '/')]);

describe('logFigures', () => {
  test('counts pages, duplicates and violations from the request log', () => {
    // Log order need not be time order: the test web logs on arrival, but a crawler's requests interleave.
    const shuffled = [log[4], log[0], log[7], log[2], log[5], log[1], log[6], log[3]];
    expect(logFigures(shuffled, PORT, expected, 900, 1000)).toEqual({
      // /private/7 is requested but not a page anyone should fetch.
      pagesFetched: 4,
      crawlSeconds: 4.1,
      // /page/1 again, spelled with a tracking parameter.
      duplicateFetches: 1,
      // a: robots.txt → / (100 ms), /page/1? → /page/2 (800 ms); b: / → /sitemap.xml (100 ms).
      politenessViolations: 3,
      pageViolations: 1,
      closestPageGapMs: 800,
      // a's first request 100 ms after the start, b's 600 ms.
      firstRequestSeconds: { min: 0.1, p50: 0.6, p90: 0.6, max: 0.6 },
      // a: 1000 → 5000, b: 1500 → 1600.
      meanHostSpanSeconds: 2,
    });
  });

  test('without an expected set every distinct page counts; without a delay nothing is a violation', () => {
    expect(logFigures(log, PORT, null, 900, 0)).toMatchObject({ pagesFetched: 5, politenessViolations: 0, pageViolations: 0, closestPageGapMs: 800 });
  });

  test('an empty log', () => {
    expect(logFigures([], PORT, expected, 900, 1000)).toEqual({
      pagesFetched: 0,
      crawlSeconds: 0,
      duplicateFetches: 0,
      politenessViolations: 0,
      pageViolations: 0,
      closestPageGapMs: null,
      firstRequestSeconds: { min: 0, p50: 0, p90: 0, max: 0 },
      meanHostSpanSeconds: 0,
    });
  });
});

describe('politeness', () => {
  test('ideal span and bound count the delay and the mean server latency', () => {
    // 10 pages × (1 s + 0.65 s) = 16.5 s ideal; 500 hosts ÷ 1.65 s.
    expect(politeness({ hosts: 500, pages: 10, delayMs: 1000 }, 650, 33)).toEqual({ efficiency: 0.5, boundPagesPerSec: 303 });
    expect(politeness({ hosts: 200, pages: 20, delayMs: 1000 }, 0, 40)).toEqual({ efficiency: 0.5, boundPagesPerSec: 200 });
  });

  test('no delay, no bound', () => {
    expect(politeness({ hosts: 100, pages: 50, delayMs: 0 }, 100, 10)).toEqual({ efficiency: null, boundPagesPerSec: null });
  });
});

describe('politenessCeiling', () => {
  // Latency by target, and the second request of a target slower than its first.
  const latency = (host: string, target: string, nth: number): number => (host === 'a.test' ? 100 : 0) + (target === '/slow' ? 900 : 100) + (nth > 1 ? 1000 : 0);

  test('the slowest host, each request the delay after the previous response, decides it', () => {
    const twoHosts: RequestRecord[] = [
      // a: robots.txt 200 ms, / 200 ms, /slow 1000 ms, then the last request (its own latency does not count).
      rec('a.test', '/slow', 9000),
      rec('a.test', '/robots.txt', 1000),
      rec('a.test', '/', 3000),
      rec('a.test', '/last', 12000),
      // b: three requests at 100 ms each, the last one not counted.
      rec('b.test', '/robots.txt', 1000),
      rec('b.test', '/', 2000),
      rec('b.test', '/x', 3000),
    ];
    // a's last request goes out (1000 + 200) + (1000 + 200) + (1000 + 1000) = 4400 ms after the start.
    // The ideal is 3 pages × (1000 + 300) = 3900 ms.
    expect(politenessCeiling(twoHosts, { hosts: 2, pages: 3, delayMs: 1000 }, 300, latency)).toBe(0.886);
  });

  test('a repeated target takes its own latency draw', () => {
    const again = [rec('b.test', '/', 0), rec('b.test', '/', 2000), rec('b.test', '/end', 5000)];
    // (1000 + 100) + (1000 + 1100) = 3200 ms against 2 × 1000 + 2 × 100.
    expect(politenessCeiling(again, { hosts: 1, pages: 2, delayMs: 1000 }, 100, latency)).toBe(0.688);
  });

  test('fixed latency and one interval a page: a perfect crawler reaches 1', () => {
    const fixed = (): number => 100;
    const oneHost = [rec('c.test', '/robots.txt', 0), rec('c.test', '/', 1100), rec('c.test', '/2', 2200)];
    expect(politenessCeiling(oneHost, { hosts: 1, pages: 2, delayMs: 1000 }, 100, fixed)).toBe(1);
  });

  test('no delay or no requests, no ceiling', () => {
    expect(politenessCeiling(log, { hosts: 2, pages: 3, delayMs: 0 }, 0, latency)).toBeNull();
    expect(politenessCeiling([], { hosts: 2, pages: 3, delayMs: 1000 }, 0, latency)).toBeNull();
  });
});

describe('firstTaskFigures', () => {
  test('gives quantiles in seconds and the share of hosts whose first task came with the start', () => {
    // Two eager starts (no wait), then hosts that waited in the queue.
    expect(firstTaskFigures([1500, 0, 200, 1, 900, 2500, 400, 700, 1200, 2000])).toEqual({ p50: 0.9, p90: 2.5, max: 2.5, eagerShare: 0.2 });
    expect(firstTaskFigures([0, 0, 0])).toEqual({ p50: 0, p90: 0, max: 0, eagerShare: 1 });
  });

  test('is null when no host workflow started (nothing to say, not zero)', () => {
    expect(firstTaskFigures([])).toBeNull();
  });
});

describe('embedFigures', () => {
  // Pages are / and /p/N; /static/ is what every page shares; the first page needs 2 shared files and 1 image of its own.
  const site = { isPage: (p: string) => p === '/' || p.startsWith('/p/'), isShared: (p: string) => p.startsWith('/static/'), firstPageEmbeds: 3 };

  test('shared files fetched once per host: later pages add only their own embeds', () => {
    const once: RequestRecord[] = [
      rec('a.test', '/robots.txt', 0),
      rec('a.test', '/', 1),
      rec('a.test', '/static/a.css', 2),
      rec('a.test', '/static/b.js', 3),
      rec('a.test', '/img/0.jpg', 4),
      rec('a.test', '/p/1', 5),
      rec('a.test', '/img/1.jpg', 6),
      rec('a.test', '/p/2', 7),
      rec('a.test', '/img/2a.jpg', 8),
      rec('a.test', '/img/2b.jpg', 9),
      // b's first page only.
      rec('b.test', '/', 10),
      rec('b.test', '/static/a.css', 11),
      rec('b.test', '/static/b.js', 12),
      rec('b.test', '/img/0.jpg', 13),
    ];
    expect(embedFigures(once, site)).toEqual({
      pagesRequested: 4,
      embedRequests: 9,
      requestsPerPage: 3.5,
      repeatedEmbedRequests: 0,
      sharedRequestsPerHost: 2,
      // a: 6 embeds − 3 over 2 later pages; b has no later page.
      extraRequestsPerLaterPage: 1.5,
    });
  });

  test('shared files fetched again for every page count on each later page', () => {
    const again: RequestRecord[] = [
      rec('a.test', '/', 1),
      rec('a.test', '/static/a.css', 2),
      rec('a.test', '/static/b.js', 3),
      rec('a.test', '/img/0.jpg', 4),
      rec('a.test', '/p/1', 5),
      rec('a.test', '/static/a.css', 6),
      rec('a.test', '/static/b.js', 7),
      rec('a.test', '/img/1.jpg', 8),
    ];
    expect(embedFigures(again, site)).toMatchObject({ repeatedEmbedRequests: 2, sharedRequestsPerHost: 4, extraRequestsPerLaterPage: 3 });
  });

  test('no embeds at all (requisites off): nothing extra, not less than nothing', () => {
    const off = [rec('a.test', '/robots.txt', 0), rec('a.test', '/', 1), rec('a.test', '/p/1', 2)];
    expect(embedFigures(off, site)).toEqual({
      pagesRequested: 2,
      embedRequests: 0,
      requestsPerPage: 1.5,
      repeatedEmbedRequests: 0,
      sharedRequestsPerHost: 0,
      extraRequestsPerLaterPage: 0,
    });
  });
});

describe('redisCommandsPerPage', () => {
  // INFO commandstats as Redis 7 prints it: a command's calls, then its timings.
  const stats = (calls: Record<string, number>): string =>
    ['# Commandstats', ...Object.entries(calls).map(([c, n]) => `cmdstat_${c}:calls=${n},usec=${n * 3},usec_per_call=3.00,rejected_calls=0,failed_calls=0`)].join('\r\n');

  test('counts the calls made between two readings, per page, largest first', () => {
    const before = stats({ get: 10, evalsha: 4, info: 1 });
    // A command first seen after the start (sismember) counts whole; one unchanged (info) not at all.
    const after = stats({ get: 30, evalsha: 44, info: 1, sismember: 5 });
    expect(redisCommandsPerPage(before, after, 10)).toEqual({ total: 6.5, byCommand: { evalsha: 4, get: 2, sismember: 0.5 } });
  });

  test('keeps only the largest commands by name, but counts them all in the total', () => {
    expect(redisCommandsPerPage(stats({}), stats({ get: 3, hget: 2, set: 1 }), 1, 2)).toEqual({ total: 6, byCommand: { get: 3, hget: 2 } });
  });
});
