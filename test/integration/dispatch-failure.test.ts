// A campaign whose dispatch round fails past its retries (Redis or Temporal
// unreachable for minutes) does not fail: it shows why in its status, tries
// again, and completes once a round works. Failing would leave its host
// workflows crawling with nobody to stop them, and its output unsealed.
// Real workflows and activities on the real dev server; the first dispatch
// round is made to fail at once (a non-retryable failure skips the local
// activity's minutes of retries), the host session is the stand-in.
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { DispatchInput } from '../../activities/types';
import { startCampaign } from '../../src/temporal/campaign-client';
import { campaignStatusQuery, type CampaignStatus } from '../../workflows/messages';
import { TASK_QUEUE_PREFIX } from '../support/harness';
import { startInProcessWorker, type InProcessWorker } from '../support/in-process-worker';
import { standInSession } from '../support/stand-in-session';

jest.setTimeout(180_000);
Runtime.install({ logger: new DefaultLogger('ERROR') });

let worker: InProcessWorker;
let failuresLeft = 0;
const taskQueue = `${TASK_QUEUE_PREFIX}-dispatch-failure-${process.pid}`;

beforeAll(async () => {
  worker = await startInProcessWorker(taskQueue, (rt, real) => ({
    crawlSession: standInSession(rt),
    dispatchHosts: async (input: DispatchInput) => {
      if (failuresLeft > 0) {
        failuresLeft--;
        throw ApplicationFailure.nonRetryable('Redis unreachable (made to fail by the test)', 'RedisDown');
      }
      return real.dispatchHosts(input);
    },
  }));
}, 120_000);

afterAll(() => worker?.stop());

test('a failed dispatch round is shown in the status and tried again; the campaign then completes with every host', async () => {
  failuresLeft = 2;
  const hosts = ['a.dispatch.test', 'b.dispatch.test', 'c.dispatch.test'];
  const campaignId = `dispatch-failure-${process.pid}-${Date.now().toString(36)}`;
  const handle = await startCampaign(worker.client, taskQueue, {
    campaignId,
    seeds: hosts.map((h) => `http://${h}/`),
    scope: { mode: 'any' },
    output: { dir: path.join(process.env.CRAWLER_TEST_DATA_DIR!, campaignId) },
  });
  let failing: CampaignStatus['dispatchError'];
  // Until it shows, or the campaign is no longer running (before, the failure failed it).
  while (!failing && (await handle.describe()).status.name === 'RUNNING') {
    failing = (await handle.query(campaignStatusQuery)).dispatchError;
    if (!failing) await new Promise((r) => setTimeout(r, 200));
  }
  expect(failing).toMatchObject({ message: expect.stringContaining('Redis unreachable'), failures: expect.any(Number) });
  const result = await handle.result();
  expect(failuresLeft).toBe(0);
  expect(result).toMatchObject({ status: 'completed', hosts: 3, pages: 3 });
  expect((await handle.query(campaignStatusQuery)).dispatchError).toBeUndefined();
});
