// Durability: a worker killed with SIGKILL mid-crawl, and every worker
// stopped while domains sleep, lose nothing.
import fs from 'node:fs';
import path from 'node:path';
import { MIN_SPILL_ABOVE } from '../../src/config/campaign';
import { hostKeys } from '../../src/redis/keys';
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, minGapsByHost, outputOf, pageRequests, sleep, urlOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);

describe('kill -9 a worker mid-crawl', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('crash', { workers: 2 });
    // 40 pages a host, 6 links a page: each host's frontier passes the spill bound below on its way (with 3 a page it
    // peaked near the bound, 20, and one run of the whole suite spilled nothing).
    for (const spec of generateSites({ count: 6, pages: 40, fanOut: 6, hostPattern: (i) => `k${i}.crash.test`, seed: 3 })) h.web.addSite(spec);
  });
  afterAll(() => h?.close());

  test('the campaign completes with nothing missing and stays polite', async () => {
    const seed = h.web.url('k0.crash.test', '/');
    // The least spill bound: hosts spill and refill their frontiers (src/redis/frontier-spill.ts) across the kill.
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 200 }, frontier: { spillAbove: MIN_SPILL_ABOVE } });
    // Let the crawl get going, then kill one worker outright and start a fresh one.
    while (pageRequests(h.web.requests()).length < 40) await sleep(100);
    h.mark('kill -9 of one worker');
    const victim = h.pool.alive()[0];
    await h.pool.kill9(victim);
    const killedAt = performance.timeOrigin + performance.now();
    const requestsAtKill = pageRequests(h.web.requests()).length;
    await h.pool.startOne();
    const result = await handle.result();

    const expected = h.web.expectedPages([seed]);
    const requests = pageRequests(h.web.requests());
    const fetched = requests.map((r) => urlOf(h, r));
    expect(requestsAtKill).toBeLessThan(expected.size);
    expect(result.status).toBe('completed');
    expect(new Set(fetched)).toEqual(expected);
    // Only a step in flight on the killed worker may fetch its page again:
    // every repeated page was first requested before the kill, is requested
    // exactly twice, and a host (one step at a time) repeats at most one page.
    const times = new Map<string, number[]>();
    for (const r of requests) times.set(urlOf(h, r), [...(times.get(urlOf(h, r)) ?? []), r.t]);
    const repeated = [...times].filter(([, ts]) => ts.length > 1).map(([url, ts]) => [url, ts.sort((a, b) => a - b)] as const);
    for (const [url, ts] of repeated) expect({ url, requests: ts.length, firstBeforeKill: ts[0] < killedAt }).toEqual({ url, requests: 2, firstBeforeKill: true });
    const repeatsPerHost = new Map<string, number>();
    for (const [url] of repeated) repeatsPerHost.set(new URL(url).host, (repeatsPerHost.get(new URL(url).host) ?? 0) + 1);
    expect([...repeatsPerHost.values()].every((n) => n === 1)).toBe(true);
    for (const [, gap] of minGapsByHost(h.web.requests())) expect(gap).toBeGreaterThanOrEqual(200);
    const stored = new Set(fetchedUrls(await outputOf(h, result.campaignId).index()));
    expect(stored).toEqual(expected);
    // Segments were written, and every one read back: none registered, none counted, none left in the output.
    const campaignKey = `${result.campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
    const hosts = [...new Set([...expected].map((u) => new URL(u).host))];
    let written = 0;
    for (const host of hosts) {
      const k = hostKeys(campaignKey, host);
      const [segments, spilled] = await h.redis.hmget(k.stats, 'segmentsSpilled', 'spilled');
      written += Number(segments ?? 0);
      expect({ host, spilled: Number(spilled ?? 0), registered: await h.redis.exists(k.spill) }).toEqual({ host, spilled: 0, registered: 0 });
    }
    expect(written).toBeGreaterThan(0);
    const left = path.join(outputOf(h, result.campaignId).dir, 'frontier');
    expect(fs.existsSync(left) ? fs.readdirSync(left, { recursive: true }).filter((f) => String(f).endsWith('.seg')) : []).toEqual([]);
  });
});

describe('durable sleep', () => {
  let h: Harness;
  beforeAll(async () => {
    // Info: each page and each handover in the file's worker log, printed if the test fails.
    h = await createHarness('sleep', { workers: 1, env: { CRAWLER_LOG_LEVEL: 'info' } });
    for (const spec of generateSites({ count: 2, pages: 6, fanOut: 2, hostPattern: (i) => `s${i}.sleep.test`, seed: 5 })) h.web.addSite(spec);
  });
  afterAll(() => h?.close());

  test('no worker while domains sleep; one started later resumes where it was', async () => {
    // The server ends a stopping worker's polls itself: a session handed to a poll the SDK cut at its
    // stop was started and never run, and its host waited the 5-minute heartbeat timeout (seen here).
    const ns = await h.client.workflowService.describeNamespace({ namespace: 'default' });
    expect(ns.namespaceInfo?.capabilities?.workerPollCompleteOnShutdown).toBe(true);
    const seed = h.web.url('s0.sleep.test', '/');
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 1_000 } });
    while (pageRequests(h.web.requests()).length < 3) await sleep(100);
    h.mark('stopping every worker');
    await h.pool.stopAll();
    const before = pageRequests(h.web.requests()).map((r) => urlOf(h, r));
    // Nothing runs while no worker is up, however long it takes (here three times the hosts' delay)...
    await sleep(3_000);
    expect(pageRequests(h.web.requests()).length).toBe(before.length);
    // ...and the timers are still there: a new worker picks up the sleeping domains.
    h.mark('starting a worker');
    await h.pool.startOne();
    h.mark('waiting for the campaign');
    const result = await handle.result();
    const all = pageRequests(h.web.requests()).map((r) => urlOf(h, r));
    const expected = h.web.expectedPages([seed]);
    expect(result.status).toBe('completed');
    expect(new Set(all)).toEqual(expected);
    expect(all.length).toBe(expected.size);
    // The pages fetched before the stop were not fetched again.
    expect(all.slice(0, before.length)).toEqual(before);
  });
});
