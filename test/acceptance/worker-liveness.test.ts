// Liveness off Temporal's heartbeat (activities/worker-liveness.ts): a worker killed with SIGKILL
// while it runs regular host sessions is found by its lease in Redis running out, and a live
// worker tells each of those hosts' workflow runs: the run abandons the session and starts the
// next one at once on the live worker, long before Temporal's heartbeat timeout (5 min) would have
// handed the session over. Read from the hosts' histories, not from the clock.
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { SessionAttempt } from '../../activities/session-ends';
import { WorkerLiveness } from '../../activities/worker-liveness';
import { createLogger } from '../../src/log/logger';
import { createRedis } from '../../src/redis/client';
import { workerKeys } from '../../src/redis/keys';
import type { RedisLike } from '../../src/redis/scripts';
import type { SessionRecord } from '../../src/redis/worker-registry';
import type { WorkerProcess } from '../../src/worker/worker-pool';
import { generateSites } from '../web/test-web';
import { sessionsOf } from '../support/worker-sessions';
import { createHarness, fetchedUrls, launch, minGapsByHost, outputOf, pageRequests, sleep, urlOf, type Harness } from '../support/harness';

jest.setTimeout(300_000);
const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What a host run's history says about its lost session and the one after it. */
function afterLoss(events: HistoryEvent[], session: number) {
  const lostAt = events.findIndex((e) => {
    const a = e.workflowExecutionSignaledEventAttributes;
    const p = a?.input?.payloads?.[0];
    return a?.signalName === 'sessionLost' && p && defaultPayloadConverter.fromPayload<{ session: number }>(p as Payload).session === session;
  });
  const scheduled = events.filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED);
  // The lost session: the activity scheduled last before the message.
  const lost = scheduled.filter((e) => events.indexOf(e) < lostAt).pop();
  const lostId = lost?.eventId?.toString();
  const next = scheduled.find((e) => events.indexOf(e) > lostAt);
  const nextId = next?.eventId?.toString();
  const of = (id: string | undefined, t: temporal.api.enums.v1.EventType) =>
    events.findIndex((e) => {
      if (e.eventType !== t) return false;
      const attrs =
        e.activityTaskCompletedEventAttributes ?? e.activityTaskTimedOutEventAttributes ?? e.activityTaskCancelRequestedEventAttributes ?? e.activityTaskFailedEventAttributes;
      return attrs?.scheduledEventId?.toString() === id;
    });
  return {
    session,
    told: lostAt >= 0,
    cancelRequested: of(lostId, EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED) > lostAt,
    nextScheduled: next !== undefined,
    nextCompletedAt: of(nextId, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED),
    lostTimedOutAt: of(lostId, EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT),
    // The server never ran the lost session again (its retry would take the host from the next one).
    lostRetried: events.some(
      (e) =>
        e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED &&
        e.activityTaskStartedEventAttributes?.scheduledEventId?.toString() === lostId &&
        (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1,
    ),
  };
}

describe('kill -9 of the worker running host sessions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('liveness-kill', { workers: 2 });
    for (const spec of generateSites({ count: 4, pages: 30, fanOut: 3, hostPattern: (i) => `l${i}.liveness.test`, seed: 7 })) h.web.addSite(spec);
  });
  afterAll(() => h?.close());

  test('its hosts start their next session on the live worker before the heartbeat timeout, losing nothing', async () => {
    const seed = h.web.url('l0.liveness.test', '/');
    // Short sessions: the one after the loss ends (and shows in history) well inside the heartbeat timeout (5 min).
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 300 }, session: { maxMs: 4_000, firstLocalMs: 1_000 } });
    let victim: WorkerProcess | undefined;
    let lost: SessionRecord[] = [];
    while (!victim) {
      for (const w of h.pool.alive()) {
        const records = (await sessionsOf(h.redis, w)).records;
        if (records.length > 0) [victim, lost] = [w, records];
      }
      if (!victim) await sleep(100);
    }
    await h.pool.kill9(victim);
    const killedAt = performance.timeOrigin + performance.now();
    const result = await handle.result();
    expect(result.status).toBe('completed');

    for (const r of lost) {
      const events = (await h.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory()).events ?? [];
      const seen = afterLoss(events, r.session);
      expect(seen).toEqual({ ...seen, told: true, cancelRequested: true, nextScheduled: true, lostRetried: false });
      // The next session ended before the lost one's heartbeat timeout fired (or the run closed before it did).
      expect(seen.nextCompletedAt).toBeGreaterThan(0);
      if (seen.lostTimedOutAt >= 0) expect(seen.nextCompletedAt).toBeLessThan(seen.lostTimedOutAt);
    }

    const expected = h.web.expectedPages([seed]);
    const requests = pageRequests(h.web.requests());
    expect(new Set(requests.map((r) => urlOf(h, r)))).toEqual(expected);
    // Only a page in flight on the killed worker may be fetched again: once, first before the kill.
    const times = new Map<string, number[]>();
    for (const r of requests) times.set(urlOf(h, r), [...(times.get(urlOf(h, r)) ?? []), r.t]);
    const repeated = [...times].filter(([, ts]) => ts.length > 1);
    for (const [url, ts] of repeated) expect({ url, requests: ts.length, firstBeforeKill: Math.min(...ts) < killedAt }).toEqual({ url, requests: 2, firstBeforeKill: true });
    const perHost = new Map<string, number>();
    for (const [url] of repeated) perHost.set(new URL(url).host, (perHost.get(new URL(url).host) ?? 0) + 1);
    expect([...perHost.values()].every((n) => n <= 1)).toBe(true);
    for (const [, gap] of minGapsByHost(h.web.requests())) expect(gap).toBeGreaterThanOrEqual(300);
    expect(new Set(fetchedUrls(await outputOf(h, result.campaignId).index()))).toEqual(expected);
  });
});

describe('SIGTERM to the worker running host sessions', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness('liveness-term', { workers: 2 });
    for (const spec of generateSites({ count: 4, pages: 30, fanOut: 3, hostPattern: (i) => `t${i}.liveness.test`, seed: 8 })) h.web.addSite(spec);
  });
  afterAll(() => h?.close());

  test('its sessions end after their page in flight and its hosts go on on the other worker, nothing fetched twice', async () => {
    const seed = h.web.url('t0.liveness.test', '/');
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 300 }, session: { firstLocalMs: 1_000 } });
    let victim: WorkerProcess | undefined;
    let handed: SessionRecord[] = [];
    while (!victim) {
      for (const w of h.pool.alive()) {
        const records = (await sessionsOf(h.redis, w)).records;
        if (records.length > 0) [victim, handed] = [w, records];
      }
      if (!victim) await sleep(100);
    }
    const termAt = performance.timeOrigin + performance.now();
    await h.pool.terminate(victim);
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const requests = pageRequests(h.web.requests());
    // The hosts whose sessions the stopped worker ran were crawled on after the SIGTERM (on the other worker).
    const hostOf = (r: SessionRecord) => r.workflowId.slice(r.workflowId.lastIndexOf('/') + 1).replace(/:\d+$/, '');
    expect(handed.some((r) => requests.some((q) => q.host === hostOf(r) && q.t > termAt))).toBe(true);
    const expected = h.web.expectedPages([seed]);
    const fetched = requests.map((r) => urlOf(h, r));
    expect(new Set(fetched)).toEqual(expected);
    expect(fetched.length).toBe(expected.size);
    expect(new Set(fetchedUrls(await outputOf(h, result.campaignId).index()))).toEqual(expected);
  });
});

describe('a session that ends while the Temporal server may not hear of it', () => {
  let h: Harness;
  let redis: RedisLike;
  beforeAll(async () => {
    h = await createHarness('liveness-settle', { workers: 1 });
    redis = createRedis(process.env.REDIS_URL!);
    for (const spec of generateSites({ count: 1, pages: 30, fanOut: 3, hostPattern: () => 'settle.liveness.test', seed: 9 })) h.web.addSite(spec);
  });
  afterAll(async () => {
    redis?.disconnect();
    await h?.close();
  });

  /** A worker (a registry of its own) on which session `r` ended as attempt `ran` (while it stopped, or before), stopped: whether it left, and whether the record stayed. */
  async function stopAfter(client: Client, r: SessionRecord, ran: SessionAttempt, stopping = true) {
    const group = randomUUID();
    const liveness = new WorkerLiveness(redis, client, { leaseMs: 60_000, namespace: client.options.namespace, log: createLogger({ level: 'error' }), group });
    const reg = await liveness.register(r);
    await liveness.ended(reg, ran, stopping);
    const left = await liveness.stop();
    const kept = Object.keys(await redis.hgetall(workerKeys(group).sessions(reg.workerId)));
    return { left, kept: kept.length };
  }

  const sessionLostSignals = async (r: SessionRecord) =>
    (await h.client.workflow.getHandle(r.workflowId, r.runId).fetchHistory()).events!.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sessionLost')
      .length;

  test('its record stays while the server cannot say; an attempt the server still has started is reported lost, then dropped', async () => {
    const seed = h.web.url('settle.liveness.test', '/');
    const handle = await launch(h, { seeds: [seed], scope: { mode: 'any' }, politeness: { minDelayMs: 300 }, session: { firstLocalMs: 1_000 } });
    let running: { r: SessionRecord; ran: SessionAttempt } | undefined;
    while (!running) {
      for (const r of (await sessionsOf(h.redis, h.pool.alive()[0])).records) {
        const described = await h.client.workflowService.describeWorkflowExecution({
          namespace: h.client.options.namespace,
          execution: { workflowId: r.workflowId, runId: r.runId },
        });
        const a = described.pendingActivities?.find(
          (p) => p.activityType?.name === 'crawlSession' && p.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        );
        if (a) running = { r, ran: { activityId: a.activityId!, attempt: a.attempt! } };
      }
      if (!running) await sleep(100);
    }
    // A server that does not answer cannot say whether the end got there: the record stays, the worker does not leave (its lease runs out, and a live worker tells the host).
    const deaf = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }), namespace: h.client.options.namespace });
    expect(await stopAfter(deaf, running.r, running.ran)).toEqual({ left: false, kept: 1 });
    // The same for a session that ended before the worker began to stop (its record went at its end, and comes back).
    expect(await stopAfter(deaf, running.r, running.ran, false)).toEqual({ left: false, kept: 1 });
    expect(await sessionLostSignals(running.r)).toBe(0);
    // An attempt the server no longer has as started (its end arrived, or it was retried): the record goes, the host is not told.
    expect(await stopAfter(h.client, running.r, { ...running.ran, activityId: 'not-pending' })).toEqual({ left: true, kept: 0 });
    expect(await sessionLostSignals(running.r)).toBe(0);
    // Still started at the server though it "ended" here (its result never got there): the host is told, the record goes.
    expect(await stopAfter(h.client, running.r, running.ran)).toEqual({ left: true, kept: 0 });
    expect(await sessionLostSignals(running.r)).toBe(1);
    // Told, the host moved on to its next session and the campaign crawled every page, once.
    const result = await handle.result();
    expect(result.status).toBe('completed');
    const expected = h.web.expectedPages([seed]);
    const fetched = pageRequests(h.web.requests()).map((q) => urlOf(h, q));
    expect(new Set(fetched)).toEqual(expected);
    expect(new Set(fetchedUrls(await outputOf(h, result.campaignId).index()))).toEqual(expected);
    // The run closed: nothing of it can be running.
    expect(await stopAfter(h.client, running.r, running.ran)).toEqual({ left: true, kept: 0 });
  });
});
