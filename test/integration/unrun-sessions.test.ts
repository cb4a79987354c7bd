// A session the server handed a stopping worker, which that worker never ran
// (activities/unrun-sessions.ts). The handing over is made certain here: a poll
// of the test's own, under an identity no worker has, takes one of a host's
// sessions from the task queue and never runs it, as a stopping worker's last
// poll did. Without a tell, that host waits for the session heartbeat timeout
// (5 min), past this test's own timeout.
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { SessionInput } from '../../activities/types';
import { UnrunSessions } from '../../activities/unrun-sessions';
import { createLogger } from '../../src/log/logger';
import { generateSites } from '../web/test-web';
import { createHarness, fetchedUrls, launch, outputOf, pageRequests, urlOf, type Harness } from '../support/harness';

jest.setTimeout(150_000);

const HOST = 'unrun.sessions.test';
const STOPPED = 'stopped-worker@nowhere';
let h: Harness;

beforeAll(async () => {
  h = await createHarness('unrun', { workers: 1 });
  for (const spec of generateSites({ count: 1, pages: 24, fanOut: 3, crossPerPage: 0, hostPattern: () => HOST, seed: 5 })) h.web.addSite(spec);
});
afterAll(() => h?.close());

/** Polls the campaign's task queue as `identity` until it is handed a host session, which it keeps and never runs. */
async function takeOneSession(identity: string): Promise<temporal.api.workflowservice.v1.PollActivityTaskQueueResponse> {
  for (;;) {
    // A long poll needs a deadline (the server answers empty before it runs out).
    const task = await h.client.connection.withDeadline(Date.now() + 70_000, () =>
      h.client.workflowService.pollActivityTaskQueue({ namespace: h.client.options.namespace, taskQueue: { name: h.taskQueue }, identity }),
    );
    if (task.activityType?.name === 'crawlSession') return task;
    // Nothing came within the long poll (or another activity did, which the host's run retries): poll again.
  }
}

const unrunSessions = (identity: string) => new UnrunSessions(h.client, { namespace: h.client.options.namespace, identity, log: createLogger({ level: 'error' }) });

test("a host whose session a stopped worker was handed and never ran is told, by that worker's identity, and goes on at once", async () => {
  const seed = h.web.url(HOST, '/');
  // Short sessions, so the host's sessions come one after another through the task queue.
  const handle = await launch(h, { seeds: [seed], politeness: { minDelayMs: 200 }, session: { firstLocalMs: 500, maxPages: 2 } });
  const task = await takeOneSession(STOPPED);
  const run = { workflowId: task.workflowExecution!.workflowId!, runId: task.workflowExecution!.runId! };
  const session = defaultPayloadConverter.fromPayload<SessionInput>(task.input!.payloads![0] as Payload).session;
  expect(typeof session).toBe('number');

  // Another worker's identity: not its session to give back. No session of the host ended here: nobody to look up.
  const other = unrunSessions('another-worker@nowhere');
  other.sessionEnded(run.workflowId);
  expect(await other.tell()).toEqual([]);
  expect(await unrunSessions(STOPPED).tell()).toEqual([]);

  // The worker the session was handed to, after a session of that host ended on it: the host is told which session is lost.
  const stopped = unrunSessions(STOPPED);
  stopped.sessionEnded(run.workflowId);
  stopped.stopping();
  expect(await stopped.tell()).toEqual([run.workflowId]);
  const events = (await h.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory()).events ?? [];
  const told = events
    .map((e) => e.workflowExecutionSignaledEventAttributes)
    .filter((a) => a?.signalName === 'sessionLost')
    .map((a) => defaultPayloadConverter.fromPayload<{ session: number }>(a!.input!.payloads![0] as Payload).session);
  expect(told).toEqual([session]);

  // The host went on with its next session on the live worker: every page crawled, each once, long before the heartbeat timeout.
  const result = await handle.result();
  expect(result.status).toBe('completed');
  const expected = h.web.expectedPages([seed]);
  const fetched = pageRequests(h.web.requests()).map((r) => urlOf(h, r));
  expect(new Set(fetched)).toEqual(expected);
  expect(fetched.length).toBe(expected.size);
  expect(new Set(fetchedUrls(await outputOf(h, result.campaignId).index()))).toEqual(expected);
});

test('a server that does not answer holds the look no longer than its bound: nobody told, nothing thrown', async () => {
  const deaf = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }), namespace: h.client.options.namespace });
  const unrun = new UnrunSessions(deaf, { namespace: h.client.options.namespace, identity: STOPPED, log: createLogger({ level: 'silent' }), lookMs: 1_000 });
  for (let i = 0; i < 40; i++) unrun.sessionEnded(`host-${i}`);
  unrun.stopping();
  const started = Date.now();
  expect(await unrun.tell()).toEqual([]);
  // Bounded by the look's deadline (1 s here), not by the client's retries; generous for a loaded machine.
  expect(Date.now() - started).toBeLessThan(15_000);
});
