// The bench's per-worker figures (bench/session-placement.ts): which worker
// ran each host session, read from a host's history as the SDK writes it.
import { temporal } from '@temporalio/proto';
import { identityPid, tallySessions, type WorkerSessions } from '../../bench/session-placement';

const E = temporal.api.enums.v1.EventType;
const at = (s: number) => ({ seconds: Math.floor(s), nanos: Math.round((s % 1) * 1e9) });
const json = (v: unknown) => ({ payloads: [{ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(v)) }] });

/** A hostCrawl run: its first session local on worker A, then a session on B, a bookkeeping activity on A, and a session retried on A then B. */
// Event IDs as plain numbers (Long in the types): the tally reads either through Number().
const events = [
  { eventId: 1, eventType: E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED },
  { eventId: 3, eventType: E.EVENT_TYPE_WORKFLOW_TASK_STARTED, workflowTaskStartedEventAttributes: { identity: '11@a' } },
  { eventId: 4, eventType: E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, workflowTaskCompletedEventAttributes: { identity: '11@a' } },
  {
    eventId: 5,
    eventType: E.EVENT_TYPE_MARKER_RECORDED,
    markerRecordedEventAttributes: { markerName: 'core_local_activity', details: { data: json({ activity_type: 'crawlSession', seq: 1 }), result: json({ pages: 40 }) } },
  },
  { eventId: 6, eventTime: at(100), eventType: E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, activityTaskScheduledEventAttributes: { activityType: { name: 'crawlSession' } } },
  // Waited 0.25 s in the task queue.
  { eventId: 7, eventTime: at(100.25), eventType: E.EVENT_TYPE_ACTIVITY_TASK_STARTED, activityTaskStartedEventAttributes: { scheduledEventId: 6, identity: '22@b' } },
  { eventId: 8, eventType: E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, activityTaskCompletedEventAttributes: { scheduledEventId: 6, identity: '22@b', result: json({ pages: 900 }) } },
  { eventId: 9, eventType: E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, workflowTaskCompletedEventAttributes: { identity: '22@b' } },
  // Not a session: neither counted nor its pages.
  { eventId: 10, eventType: E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, activityTaskScheduledEventAttributes: { activityType: { name: 'releaseHost' } } },
  { eventId: 11, eventTime: at(104), eventType: E.EVENT_TYPE_ACTIVITY_TASK_STARTED, activityTaskStartedEventAttributes: { scheduledEventId: 10, identity: '11@a' } },
  {
    eventId: 12,
    eventType: E.EVENT_TYPE_MARKER_RECORDED,
    markerRecordedEventAttributes: { markerName: 'core_local_activity', details: { data: json({ activity_type: 'releaseHost' }), result: json({ pages: 5 }) } },
  },
  { eventId: 13, eventTime: at(110), eventType: E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, activityTaskScheduledEventAttributes: { activityType: { name: 'crawlSession' } } },
  // A session retried: its attempts' starts land on one event (the last attempt's worker), its completion names who finished it;
  // its wait counts the retries' backoff, not the queue's: left out of the queue waits.
  { eventId: 14, eventTime: at(150), eventType: E.EVENT_TYPE_ACTIVITY_TASK_STARTED, activityTaskStartedEventAttributes: { scheduledEventId: 13, identity: '22@b', attempt: 2 } },
  { eventId: 15, eventType: E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, activityTaskCompletedEventAttributes: { scheduledEventId: 13, identity: '22@b', result: json({ pages: 30 }) } },
] as unknown as temporal.api.history.v1.IHistoryEvent[];

test('sessions and their pages by the worker that ran them, first (local) sessions by the workflow task that ran them', () => {
  const by = new Map<string, WorkerSessions>();
  const waits: number[] = [];
  tallySessions(events, by, waits);
  expect(Object.fromEntries(by)).toEqual({
    '11@a': { sessions: 1, firstSessions: 1, pages: 40 },
    '22@b': { sessions: 2, firstSessions: 0, pages: 930 },
  });
  // The session from the queue (first attempt) only: not the bookkeeping activity, not the retried one.
  expect(waits).toEqual([250]);
  // Runs add up (a continued run, another host).
  tallySessions(events.slice(0, 5), by);
  expect(by.get('11@a')).toEqual({ sessions: 2, firstSessions: 2, pages: 80 });
});

test("a worker's process ID from the SDK's default identity", () => {
  expect(identityPid('4242@box')).toBe(4242);
  expect(identityPid('my-worker')).toBeNull();
});
