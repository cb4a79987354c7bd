// The shared robots.txt cache and address pins, through the robots step of
// a session (activities/robots.ts) against the real Redis: a campaign that
// pins a host to a staging box (fetch.resolve, as `--resolve`) reads that
// box's robots.txt, and no campaign that lets DNS answer may be served it.
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, WorkerRuntime } from '../../activities';
import { ensureRobots } from '../../activities/robots';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { createRedis } from '../../src/redis/client';
import type { RedisLike } from '../../src/redis/scripts';
import { hostKey } from '../../src/url/normalize';
import { createHarness, type Harness } from '../support/harness';

jest.setTimeout(90_000);

// The production name does not resolve (reserved .invalid TLD, a label over
// DNS's 63 octets: the system resolver rejects it without sending a query);
// the staging campaigns pin it to the test web on loopback.
const HOST = `staging-${'x'.repeat(61)}.invalid`;

let h: Harness;
let redis: RedisLike;
const runtimes: WorkerRuntime[] = [];
beforeAll(async () => {
  h = await createHarness('robots-key', { workers: 0 });
  // The staging box keeps crawlers out altogether.
  h.web.addSite({ host: HOST, pages: 2, fanOut: 1, robots: { disallow: ['/'] } });
  redis = createRedis(process.env.REDIS_URL!);
});
afterAll(async () => {
  await Promise.all(runtimes.map((rt) => rt.close()));
  redis?.disconnect();
  await h?.close();
});

let n = 0;
/** A prepared campaign on the host, as a worker (its own runtime: its own local robots cache) sees it. */
async function campaignOn(pinned: boolean) {
  const rt = new WorkerRuntime({ redis, temporal: h.client });
  runtimes.push(rt);
  const campaignKey = `robots-key-${process.pid}-${n++}`;
  const settings = resolveCampaignSettings(
    {
      seeds: [h.web.url(HOST, '/')],
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 0 },
      sitemaps: 'off',
      fetch: pinned ? { resolve: h.web.resolveArgs() } : {},
      output: { dir: path.join(h.outDir, campaignKey) },
    },
    campaignKey,
  );
  await new MockActivityEnvironment().run(createActivities(rt).prepareCampaign, { settings, campaignKey });
  const campaign = await rt.campaign(campaignKey, 0);
  return () => ensureRobots(rt, { campaign, host: hostKey(h.web.url(HOST, '/')), maxWaitMs: 10_000, signal: AbortSignal.timeout(60_000) });
}

const robotsRequests = () => h.web.requests().filter((r) => r.host === HOST && r.path === '/robots.txt').length;

test("a campaign pinned to a staging box never serves that box's robots.txt to a campaign that is not pinned; pinned ones share it", async () => {
  const page = h.web.url(HOST, '/');
  const staging = await (await campaignOn(true))();
  expect(staging).toMatchObject({ kind: 'ok' });
  expect(staging.kind === 'ok' && staging.allows?.(page)).toBe(false);
  expect(robotsRequests()).toBe(1);

  // Production asks for its own robots.txt (which DNS cannot find: unavailable, retried later),
  // instead of taking the staging box's "Disallow: /" for a day.
  const production = await (await campaignOn(false))();
  expect(production).toMatchObject({ kind: 'wait', backingOff: true, why: expect.stringContaining('robots.txt unavailable') });

  // Another campaign pinned to the same box reads the cached copy: no second request.
  const staging2 = await (await campaignOn(true))();
  expect(staging2.kind === 'ok' && staging2.allows?.(page)).toBe(false);
  expect(robotsRequests()).toBe(1);
});
