// One campaign over 2,000 hosts: the real crawlCampaign and hostCrawl
// workflows and the real campaign activities (prepareCampaign seeds 2,000
// frontiers, dispatchHosts starts the host workflows) on the real dev
// server, with the host session replaced by a stand-in that commits without
// fetching (test/support/stand-in-session.ts), since 2,000 real crawls take
// minutes. The campaign has to start every host once, complete with every
// host's counts, and keep what it holds (its status answer, what it carries
// through continue-as-new) the same small size however many hosts it has.
import path from 'node:path';
import type { Redis } from 'ioredis';
import { defaultPayloadConverter, type Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { startCampaign } from '../../src/temporal/campaign-client';
import { DOMAIN_WORKFLOW } from '../../src/temporal/workflow-types';
import { campaignStatusQuery } from '../../workflows/messages';
import { TASK_QUEUE_PREFIX } from '../support/harness';
import { startInProcessWorker, type InProcessWorker } from '../support/in-process-worker';
import { standInSession } from '../support/stand-in-session';

jest.setTimeout(600_000);
Runtime.install({ logger: new DefaultLogger('WARN') });

const HOSTS = 2_000;
/** What the campaign may hold or answer, whatever the number of hosts. */
const SIZE_BOUND = 64 * 1024;
const EventType = temporal.api.enums.v1.EventType;
const hostName = (i: number) => `h${String(i).padStart(4, '0')}.many.test`;

let worker: InProcessWorker;
let client: Client;
let redis: Redis;
const taskQueue = `${TASK_QUEUE_PREFIX}-many-hosts-${process.pid}`;

beforeAll(async () => {
  worker = await startInProcessWorker(taskQueue, (rt) => ({ crawlSession: standInSession(rt) }), { maxConcurrentActivityTaskExecutions: 200 });
  ({ client, redis } = worker);
}, 180_000);

afterAll(() => worker?.stop());

test('a campaign over 2,000 hosts starts each, counts each once, completes, and holds the same small state throughout', async () => {
  const hosts = Array.from({ length: HOSTS }, (_, i) => hostName(i));
  const campaignId = `many-hosts-${process.pid}-${Date.now().toString(36)}`;
  const handle = await startCampaign(client, taskQueue, {
    campaignId,
    seeds: hosts.map((h) => `http://${h}/`),
    scope: { mode: 'any' },
    output: { dir: path.join(process.env.CRAWLER_TEST_DATA_DIR!, campaignId) },
  });
  // The status answer while hosts come and go: totals, never a host list.
  const sizes: number[] = [];
  const watching = (async () => {
    for (;;) {
      const s = await handle.query(campaignStatusQuery).catch(() => null);
      if (s) sizes.push(JSON.stringify(s).length);
      if (s?.status === 'completed') return;
      await new Promise((r) => setTimeout(r, 500));
      if ((await handle.describe()).status.name !== 'RUNNING') return;
    }
  })();
  const result = await handle.result();
  await watching;
  expect(result.status).toBe('completed');
  // A host workflow that completed leaves the worker's cache (the SDK evicts it once the server took
  // the completion): the cache, and the worker's memory with it, holds the hosts in flight, not every
  // host the worker ever ran. The campaign's own eviction may lag its result a little.
  for (let i = 0; i < 50 && worker.cachedWorkflows() > 1; i++) await new Promise((r) => setTimeout(r, 100));
  expect(worker.cachedWorkflows()).toBeLessThanOrEqual(1);
  expect(result.hosts).toBe(HOSTS);
  expect(result.pages).toBe(HOSTS);
  expect(result.bytes).toBe(hosts.reduce((sum, h) => sum + h.length, 0));
  expect(sizes.length).toBeGreaterThan(2);
  expect(Math.max(...sizes)).toBeLessThan(SIZE_BOUND);

  // The real prepareCampaign put each seed in its host's frontier, and the sessions took it (the host
  // records say so: the frontiers themselves went at the campaign's end, retention.keep summary).
  const campaignKey = `${campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  const records = await new CampaignHosts(redis, campaignKey).getMany([hosts[0], hosts[HOSTS / 2], hosts[HOSTS - 1]]);
  expect(records.map((r) => [r?.fetched, r?.frontier])).toEqual(records.map(() => [1, 0]));

  // Every run of the campaign: its input (what continue-as-new carries) bounded, its history bounded.
  for (let runId: string | null = handle.firstExecutionRunId; runId;) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(campaignId, runId).fetchHistory();
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    const started = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED)!;
    const input = defaultPayloadConverter.fromPayload(started.workflowExecutionStartedEventAttributes!.input!.payloads![0]);
    // The first run's input is the caller's (2,000 seeds); every later run carries counters only.
    if (runId !== handle.firstExecutionRunId) expect(JSON.stringify(input).length).toBeLessThan(SIZE_BOUND);
    expect(events.length).toBeLessThan(8_500);
    const can: temporal.api.history.v1.IHistoryEvent | undefined = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    runId = can?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? null;
  }

  // Each host's workflow ran exactly once, under its ID.
  // (Visibility lags the closes a little.)
  let runs = new Map<string, number>();
  for (let i = 0; i < 60 && runs.size < HOSTS; i++) {
    if (i) await new Promise((r) => setTimeout(r, 1_000));
    runs = new Map();
    for await (const wf of client.workflow.list({ query: `WorkflowType = '${DOMAIN_WORKFLOW}' AND CrawlCampaign = '${campaignId}'` }))
      runs.set(wf.workflowId, (runs.get(wf.workflowId) ?? 0) + 1);
  }
  expect(runs.size).toBe(HOSTS);
  // Dispatch is at least once: a dispatch round retried after its workflow
  // task timed out (a loaded machine) may start a host that had already
  // finished a second time; that run finds nothing and ends. Rare, never more.
  expect(Math.max(...runs.values())).toBeLessThanOrEqual(2);
  expect([...runs.values()].filter((n) => n > 1).length).toBeLessThan(HOSTS / 20);
});
