// One campaign over 2,000 hosts (issue 4, item 4): the real crawlCampaign
// workflow and the real activities (prepareCampaign seeds 2,000 frontiers in
// the test Redis) on the real dev server, with the domain workflows replaced
// by stand-ins that send the campaign domainCrawl's closing report and close
// (test/support/many-hosts-workflows.ts), since 2,000 real crawls take
// minutes. The campaign has to start every host once, take in every report,
// complete, and keep each run's history bounded by continuing as new: its
// whole history is several times what one run may hold.
import path from 'node:path';
import type { Redis } from 'ioredis';
import { defaultPayloadConverter, type Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { createActivities, WorkerRuntime } from '../../activities';
import { createRedis } from '../../src/redis/client';
import { Frontier } from '../../src/redis/frontier';
import { connectClient } from '../../src/temporal/connect';
import { startCampaign } from '../../src/temporal/campaign-client';
import { domainWorkflowId } from '../../workflows/ids';
import type { DomainReport } from '../../workflows/messages';
import { TASK_QUEUE_PREFIX } from '../support/harness';

jest.setTimeout(600_000);
Runtime.install({ logger: new DefaultLogger('WARN') });

const HOSTS = 2_000;
/**
 * The campaign continues as new when the server suggests it (about 4,100
 * events on the dev server) or past 8,000 (MAX_HISTORY_EVENTS in
 * workflows/crawl-campaign.ts), checked once per loop turn; a turn adds at
 * most one batch of 50 child starts (100 events), their workflow tasks and
 * the reports arriving meanwhile. All runs together hold some 12,000 events.
 */
const HISTORY_BOUND = 9_000;
const EventType = temporal.api.enums.v1.EventType;
const hostName = (i: number) => `h${String(i).padStart(4, '0')}.many.test`;

let client: Client;
let redis: Redis;
let connection: NativeConnection;
let worker: Worker;
let running: Promise<void>;
const taskQueue = `${TASK_QUEUE_PREFIX}-many-hosts-${process.pid}`;

beforeAll(async () => {
  client = await connectClient(process.env.TEMPORAL_ADDRESS!);
  redis = createRedis(process.env.REDIS_URL!) as Redis;
  connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(__dirname, '..', 'support', 'many-hosts-workflows.ts'),
    activities: createActivities(new WorkerRuntime({ redis, temporal: client })),
    // Every stand-in stays cached for its short life: no replays on top of the work.
    maxCachedWorkflows: HOSTS + 100,
  });
  running = worker.run();
}, 180_000);

afterAll(async () => {
  if (worker && worker.getState() === 'RUNNING') worker.shutdown();
  await running?.catch(() => undefined);
  await connection?.close();
  await client?.connection.close();
  redis?.disconnect();
});

interface RunFacts {
  runId: string;
  events: number;
  continuedAs: string | null;
}

test('a campaign over 2,000 hosts starts each once, hears from each, completes, and keeps every run bounded', async () => {
  const hosts = Array.from({ length: HOSTS }, (_, i) => hostName(i));
  const campaignId = `many-hosts-${process.pid}-${Date.now().toString(36)}`;
  const handle = await startCampaign(client, taskQueue, {
    campaignId,
    seeds: hosts.map((h) => `http://${h}/`),
    scope: { mode: 'any' },
    output: { dir: path.join(process.env.CRAWLER_TEST_DATA_DIR!, campaignId) },
  });
  const result = await handle.result();
  expect(result.status).toBe('completed');
  expect(result.hosts).toBe(HOSTS);
  // Counters reach the campaign only through domain reports: every host's are in.
  expect(result.pages).toBe(HOSTS);
  expect(result.bytes).toBe(hosts.reduce((sum, h) => sum + h.length, 0));

  // The real prepareCampaign put each seed in its host's frontier.
  const campaignKey = `${campaignId}.${handle.firstExecutionRunId.slice(0, 8)}`;
  for (const h of [hosts[0], hosts[HOSTS / 2], hosts[HOSTS - 1]]) expect((await new Frontier(redis, campaignKey, h).peek())?.url).toBe(`http://${h}/`);

  // Every run of the campaign, first to last, along the continue-as-new chain.
  const runs: RunFacts[] = [];
  const started = new Map<string, number>();
  const closedReports = new Map<string, number>();
  let failedStarts = 0;
  for (let runId: string | null = handle.firstExecutionRunId; runId; ) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(campaignId, runId).fetchHistory();
    const events: temporal.api.history.v1.IHistoryEvent[] = history.events ?? [];
    let next: string | null = null;
    for (const e of events) {
      if (e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED) {
        const id = e.childWorkflowExecutionStartedEventAttributes!.workflowExecution!.workflowId!;
        started.set(id, (started.get(id) ?? 0) + 1);
      } else if (e.eventType === EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED) {
        failedStarts++;
      } else if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && e.workflowExecutionSignaledEventAttributes!.signalName === 'domainReport') {
        const r = defaultPayloadConverter.fromPayload<DomainReport>(e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]);
        if (r.kind === 'closed') closedReports.set(r.host, (closedReports.get(r.host) ?? 0) + 1);
      } else if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW) {
        next = e.workflowExecutionContinuedAsNewEventAttributes!.newExecutionRunId!;
      }
    }
    runs.push({ runId, events: events.length, continuedAs: next });
    runId = next;
  }
  if (process.env.CRAWLER_TEST_VERBOSE) process.stderr.write(`many-hosts: runs ${runs.map((r) => r.events).join(', ')} events\n`);

  expect(runs.length).toBeGreaterThanOrEqual(2);
  expect(runs.filter((r) => r.events > HISTORY_BOUND)).toEqual([]);
  // Each host's domain workflow was started exactly once, under its ID, and closed once.
  expect(failedStarts).toBe(0);
  expect(started.size).toBe(HOSTS);
  expect([...started.values()].every((n) => n === 1)).toBe(true);
  expect(hosts.every((h) => started.has(domainWorkflowId(campaignId, h)))).toBe(true);
  expect(closedReports.size).toBe(HOSTS);
  expect([...closedReports.values()].every((n) => n === 1)).toBe(true);
});
