// A campaign whose dispatch round fails past its retries (Redis or Temporal
// unreachable for minutes) does not fail: it shows why in its status, tries
// again, and completes once a round works. Failing would leave its host
// workflows crawling with nobody to stop them, and its output unsealed.
// Real workflows and activities on the real dev server; dispatch rounds are
// made to fail at once (a non-retryable failure skips the local activity's
// minutes of retries) until the test has seen them retried, the host session
// is the stand-in. The pause between two rounds is the test-only
// testLimits.dispatchRetryMs (a second instead of DISPATCH_RETRY_MS).
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { DispatchInput } from '../../activities/types';
import { startCampaign } from '../../src/temporal/campaign-client';
import type { CrawlCampaignInput } from '../../workflows/crawl-campaign';
import { campaignStatusQuery, type CampaignStatus } from '../../workflows/messages';
import { TASK_QUEUE_PREFIX } from '../support/harness';
import { startInProcessWorker, type InProcessWorker } from '../support/in-process-worker';
import { standInSession } from '../support/stand-in-session';

jest.setTimeout(180_000);
Runtime.install({ logger: new DefaultLogger('ERROR') });

let worker: InProcessWorker;
/** Dispatch rounds fail while this is set; `failed` counts those that did. */
let failing = false;
let failed = 0;
const taskQueue = `${TASK_QUEUE_PREFIX}-dispatch-failure-${process.pid}`;

beforeAll(async () => {
  worker = await startInProcessWorker(taskQueue, (rt, real) => ({
    crawlSession: standInSession(rt),
    dispatchHosts: async (input: DispatchInput) => {
      if (failing) {
        failed++;
        throw ApplicationFailure.nonRetryable('Redis unreachable (made to fail by the test)', 'RedisDown');
      }
      return real.dispatchHosts(input);
    },
  }));
}, 120_000);

afterAll(() => worker?.stop());

test('a failed dispatch round is shown in the status and tried again; the campaign then completes with every host', async () => {
  failing = true;
  const hosts = ['a.dispatch.test', 'b.dispatch.test', 'c.dispatch.test'];
  const campaignId = `dispatch-failure-${process.pid}-${Date.now().toString(36)}`;
  const input: CrawlCampaignInput & { campaignId: string } = {
    campaignId,
    seeds: hosts.map((h) => `http://${h}/`),
    scope: { mode: 'any' },
    output: { dir: path.join(process.env.CRAWLER_TEST_DATA_DIR!, campaignId) },
    testLimits: { dispatchRetryMs: 1_000 },
  };
  const handle = await startCampaign(worker.client, taskQueue, input);
  let shown: CampaignStatus['dispatchError'];
  // Until the status shows a round tried again and failing again, or the
  // campaign is no longer running (before, the failure failed it).
  while (!(shown && shown.failures >= 2) && (await handle.describe()).status.name === 'RUNNING') {
    shown = (await handle.query(campaignStatusQuery)).dispatchError;
    if (!(shown && shown.failures >= 2)) await new Promise((r) => setTimeout(r, 200));
  }
  expect(shown).toMatchObject({ message: expect.stringContaining('Redis unreachable'), failures: expect.any(Number) });
  expect(shown!.failures).toBeGreaterThanOrEqual(2);
  // Redis is back: the next try works.
  failing = false;
  const result = await handle.result();
  expect(failed).toBeGreaterThanOrEqual(2);
  expect(result).toMatchObject({ status: 'completed', hosts: 3, pages: 3 });
  expect((await handle.query(campaignStatusQuery)).dispatchError).toBeUndefined();
});
