// How the dispatch starts a host's workflow (startHostWorkflow), on the real
// dev server with a real worker: whether the host's first task came to this
// worker with the start is the server's answer, not "the start succeeded".
// The dispatch keeps a robots.txt warm-up's connection for the host's session
// only when it did (issue 27: otherwise the dispatching worker kept an idle
// connection for every host whose session ran on another worker).
// The hosts' first sessions here are stand-ins that hold their workflow task
// (a first session runs as a local activity inside it) until the test lets
// them end, so the worker's workflow-task slots fill up as in a busy dispatch.
import path from 'node:path';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startHostWorkflow } from '../../activities/campaign-hosts';
import type { SessionInput, SessionResult } from '../../activities/types';
import { CrawlCampaign, CrawlHost } from '../../src/temporal/search-attributes';
import type { DomainCrawlInput } from '../../workflows/domain-crawl';
import { domainWorkflowId } from '../../workflows/ids';
import { TASK_QUEUE_PREFIX } from '../support/harness';
import { drainedResult } from '../support/stand-in-session';

jest.setTimeout(120_000);
Runtime.install({ logger: new DefaultLogger('ERROR') });

const taskQueue = `${TASK_QUEUE_PREFIX}-host-start-${process.pid}`;
const campaignId = `host-start-${process.pid}-${Date.now().toString(36)}`;
/** The worker's workflow-task slots: few, so that held first sessions fill them. */
const SLOTS = 20;

let connection: NativeConnection;
let client: Client;
let worker: Worker;
let running: Promise<void>;
/** Sessions that ran on this worker, by host; while `holding`, each waits for its `end()`. */
const sessions = new Map<string, { input: SessionInput; end: () => void }>();
let holding = true;

function heldSession(input: SessionInput): Promise<SessionResult> {
  return new Promise((resolve) => {
    const result = drainedResult(input, true, 0, { fetched: 0, failed: 0, skipped: 0, bytes: 0 });
    sessions.set(input.host, { input, end: () => resolve(result) });
    if (!holding) resolve(result);
  });
}

beforeAll(async () => {
  connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  // As in the worker (src/worker/crawler-worker.ts): the dispatch's client rides the worker's
  // native connection, which is what lets the server hand a started workflow's task back here.
  client = new Client({ connection });
  worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(__dirname, '..', '..', 'workflows', 'index.ts'),
    activities: { crawlSession: heldSession, releaseHost: async () => ({ released: true }) },
    maxConcurrentWorkflowTaskExecutions: SLOTS,
    // A waiting poll holds a slot too: two of them, so that slots are left for eager starts.
    maxConcurrentWorkflowTaskPolls: 2,
  });
  running = worker.run();
}, 90_000);

afterAll(async () => {
  holding = false;
  for (const s of sessions.values()) s.end();
  // A failed assertion can leave hosts running that no worker would take after this one: ended here.
  for (const host of started)
    await client?.workflow
      .getHandle(domainWorkflowId(campaignId, host))
      .terminate('test ended')
      .catch(() => undefined);
  if (worker?.getState() === 'RUNNING') worker.shutdown();
  await running?.catch(() => undefined);
  await connection?.close();
});

/** Hosts whose workflow the test started. */
const started = new Set<string>();
function startOf(host: string, gen = 1) {
  started.add(host);
  return {
    workflowId: domainWorkflowId(campaignId, host),
    taskQueue,
    args: [{ campaignId, campaignKey: `crawl:${campaignId}`, campaignWorkflowId: `campaign-${campaignId}`, host, gen, configVersion: 1 }] as [DomainCrawlInput],
    typedSearchAttributes: [
      { key: CrawlCampaign, value: campaignId },
      { key: CrawlHost, value: host },
    ],
  };
}

async function until(what: () => boolean, ms = 20_000): Promise<void> {
  for (const t0 = Date.now(); !what();) {
    if (Date.now() - t0 > ms) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('a host whose first task the server hands to this worker is marked so; one started while every slot is held, or already running, or not started eagerly, is not', async () => {
  // Hosts started eagerly one after the other while their first sessions hold their tasks:
  // each answered "here" runs its first session on this worker; once the slots are taken, the
  // server answers "not here" and the task goes through the queue.
  const answers: { host: string; firstTaskHere: boolean }[] = [];
  for (let i = 0; i < 3 * SLOTS && !answers.some((a) => !a.firstTaskHere); i++) {
    const host = `h${i}.host-start.test`;
    const { firstTaskHere } = await startHostWorkflow(client, startOf(host), 1, true);
    answers.push({ host, firstTaskHere });
    if (firstTaskHere) await until(() => sessions.has(host));
  }
  const here = answers.filter((a) => a.firstTaskHere);
  const refused = answers.find((a) => !a.firstTaskHere);
  expect(here.length).toBeGreaterThanOrEqual(1);
  expect(here.length).toBeLessThanOrEqual(SLOTS);
  expect(refused).toBeDefined();
  // Started all the same: its workflow runs, its first task in the queue for whichever worker polls it.
  const queued = await client.workflow.getHandle(domainWorkflowId(campaignId, refused!.host)).describe();
  expect(queued.status.name).toBe('RUNNING');

  // A host whose workflow runs already: the eager start fails, the signal-with-start wakes it; not "here".
  expect(await startHostWorkflow(client, startOf(here[0]!.host, 2), 2, true)).toEqual({ firstTaskHere: false });
  // The held sessions end, slots free, and the refused host's task, from the queue, runs here (if not already).
  holding = false;
  for (const held of sessions.values()) held.end();
  await until(() => sessions.has(refused!.host));
  // Not eager (a host crawled before): signal-with-start, never "here", even with slots free.
  const later = 'later.host-start.test';
  expect(await startHostWorkflow(client, startOf(later), 1, false)).toEqual({ firstTaskHere: false });
  await until(() => sessions.has(later));
  // Every host's workflow ends once its session did, the refused one's included.
  for (const host of [...answers.map((a) => a.host), later]) {
    expect((await client.workflow.getHandle(domainWorkflowId(campaignId, host)).result()) as unknown).toBeDefined();
  }
});
