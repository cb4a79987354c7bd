// The page step run directly (no workflow), as Temporal runs it again after
// a worker died: the same step id must get the same answer, not the next URL.
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, WorkerRuntime } from '../../activities';
import type { CrawlStepInput, CrawlStepResult, LoadRobotsResult, PrepareCampaignResult } from '../../activities/types';
import { resolveCampaignSettings } from '../../src/config/campaign';
import { createRedis } from '../../src/redis/client';
import type { RedisLike } from '../../src/redis/scripts';
import { hostKeys } from '../../src/redis/keys';
import { readIndex } from '../../src/storage/index-writer';
import { hostKey } from '../../src/url/normalize';
import { generateSites } from '../web/test-web';
import { createHarness, pageRequests, type Harness } from '../support/harness';

jest.setTimeout(60_000);

let h: Harness;
let redis: RedisLike;
let rt: WorkerRuntime;
beforeAll(async () => {
  h = await createHarness('crawl-step', { workers: 0 });
  for (const spec of generateSites({ count: 1, pages: 6, fanOut: 2, hostPattern: () => 'idem.step.test', seed: 3 })) h.web.addSite(spec);
  redis = createRedis(process.env.REDIS_URL!);
  rt = new WorkerRuntime({ redis, temporal: h.client });
});
afterAll(async () => {
  await rt?.close();
  redis?.disconnect();
  await h?.close();
});

test('a step retried after its commit answers what it committed; the next step id takes the next URL', async () => {
  const seed = h.web.url('idem.step.test', '/');
  const host = hostKey(seed);
  const campaignKey = `idem-${process.pid}`;
  const settings = resolveCampaignSettings(
    {
      seeds: [seed],
      scope: { mode: 'same-host' },
      politeness: { minDelayMs: 0 },
      sitemaps: 'off',
      fetch: { resolve: h.web.resolveArgs() },
      output: { dir: path.join(h.outDir, campaignKey) },
    },
    campaignKey,
  );
  const acts = createActivities(rt);
  const env = new MockActivityEnvironment();
  const { configVersion } = await env.run<[Parameters<typeof acts.prepareCampaign>[0]], PrepareCampaignResult, typeof acts.prepareCampaign>(acts.prepareCampaign, { settings, campaignKey });
  const robots = await env.run<[Parameters<typeof acts.loadRobots>[0]], LoadRobotsResult, typeof acts.loadRobots>(acts.loadRobots, { campaignKey, host, configVersion });
  expect(robots.kind).toBe('ok');
  const step = (stepId?: string): Promise<CrawlStepResult> =>
    env.run<[CrawlStepInput], CrawlStepResult, typeof acts.crawlStep>(acts.crawlStep, { campaignKey, campaignWorkflowId: 'none', host, configVersion, delayMs: 0, stepId });

  const first = await step('run-a/1');
  expect(first).toMatchObject({ kind: 'done', outcome: 'fetched', counted: 'fetched', requested: true });
  const url = (first as { url: string }).url;
  const again = await step('run-a/1');
  // Same answer, and the site saw one request: nothing fetched, nothing claimed.
  expect(again).toEqual({ ...first, remaining: (first as { remaining: number }).remaining });
  expect(pageRequests(h.web.requests()).map((r) => r.path)).toEqual(['/']);
  expect(await redis.hget(hostKeys(campaignKey, host).stats, 'fetched')).toBe('1');

  const second = await step('run-a/2');
  expect(second).toMatchObject({ kind: 'done', outcome: 'fetched' });
  expect((second as { url: string }).url).not.toBe(url);
  expect(pageRequests(h.web.requests())).toHaveLength(2);
  // Only the last committed step is kept: an older id gets no stale answer but a fresh step.
  const third = await step('run-a/1');
  expect((third as { url: string }).url).not.toBe(url);
  expect((third as { url: string }).url).not.toBe((second as { url: string }).url);
  expect(await redis.hget(hostKeys(campaignKey, host).stats, 'fetched')).toBe('3');

  // Steps from workflows that pass no id behave as before: each takes the next URL.
  const a = await step();
  const b = await step();
  expect((a as { url: string }).url).not.toBe((b as { url: string }).url);
  await rt.close();
  const index = await readIndex(path.join(h.outDir, campaignKey, 'index'));
  expect(index.map((e) => e.url).sort()).toEqual(pageRequests(h.web.requests()).map((r) => h.web.url(r.host, r.path)).sort());
});
