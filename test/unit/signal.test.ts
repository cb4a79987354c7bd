// signalIfRunning: the one way the crawler signals a workflow that may have
// ended (host workflows woken or told to finish, campaigns nudged). Only
// "not found" means "nobody to tell"; every other failure must reach the
// caller, or an activity would report success for a signal never delivered.
// And the workflow types clients use by name, which nothing else ties to the
// workflow functions.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defineSignal } from '@temporalio/workflow';
import { signalIfRunning, signalRunIfRunning } from '../../src/temporal/signal';
import { CAMPAIGN_WORKFLOW, DOMAIN_WORKFLOW, DOMAIN_WORKFLOWS, LEGACY_DOMAIN_WORKFLOW } from '../../src/temporal/workflow-types';
import { crawlCampaign } from '../../workflows/crawl-campaign';
import { domainCrawl, hostCrawl } from '../../workflows/domain-crawl';

const steer = defineSignal<[{ configVersion: number }]>('steer');

/** A client whose handles answer `signal` with `outcome` and record what was sent. */
function fakeClient(outcome: () => Promise<void>) {
  const sent: { workflowId: string; runId?: string; name: string; args: unknown[] }[] = [];
  const client = {
    workflow: {
      getHandle: (workflowId: string, runId?: string) => ({
        signal: async (def: { name: string }, ...args: unknown[]) => {
          sent.push({ workflowId, ...(runId ? { runId } : {}), name: def.name, args });
          return outcome();
        },
      }),
    },
  } as unknown as Client;
  return { client, sent };
}

test('a running workflow gets the signal and its arguments', async () => {
  const { client, sent } = fakeClient(async () => undefined);
  await expect(signalIfRunning(client, 'c1/a.test', steer, { configVersion: 7 })).resolves.toBe(true);
  expect(sent).toEqual([{ workflowId: 'c1/a.test', name: 'steer', args: [{ configVersion: 7 }] }]);
});

test('a message about one run goes to that run only (a newer run of the workflow is not told)', async () => {
  const { client, sent } = fakeClient(async () => undefined);
  await expect(signalRunIfRunning(client, { workflowId: 'c1/a.test', runId: 'run-1' }, steer, { configVersion: 7 })).resolves.toBe(true);
  expect(sent).toEqual([{ workflowId: 'c1/a.test', runId: 'run-1', name: 'steer', args: [{ configVersion: 7 }] }]);
  const gone = fakeClient(async () => {
    throw new WorkflowNotFoundError('workflow not found', 'c1/a.test', 'run-1');
  });
  await expect(signalRunIfRunning(gone.client, { workflowId: 'c1/a.test', runId: 'run-1' }, steer, { configVersion: 7 })).resolves.toBe(false);
});

test('a workflow that is not running (not found) is nobody to tell: false, no error', async () => {
  const { client } = fakeClient(async () => {
    throw new WorkflowNotFoundError('workflow not found', 'c1/a.test', undefined);
  });
  await expect(signalIfRunning(client, 'c1/a.test', steer, { configVersion: 7 })).resolves.toBe(false);
});

test('any other failure reaches the caller (its retries decide)', async () => {
  const unavailable = Object.assign(new Error('14 UNAVAILABLE: connection refused'), { code: 14 });
  const { client } = fakeClient(async () => {
    throw unavailable;
  });
  await expect(signalIfRunning(client, 'c1/a.test', steer, { configVersion: 7 })).rejects.toBe(unavailable);
});

test("the workflow types clients start, signal and list by are the workflow functions' names", () => {
  expect(CAMPAIGN_WORKFLOW).toBe(crawlCampaign.name);
  expect(DOMAIN_WORKFLOW).toBe(hostCrawl.name);
  expect(LEGACY_DOMAIN_WORKFLOW).toBe(domainCrawl.name);
  expect([...DOMAIN_WORKFLOWS].sort()).toEqual([domainCrawl.name, hostCrawl.name].sort());
});
