// Which worker ran each host session, read from the hosts' histories: a
// session from the task queue is an ActivityTaskStarted event carrying the
// identity of the worker that polled it; a host's first session is a local
// activity, recorded as a marker by the workflow task that ran it, whose
// WorkflowTaskCompleted event names that worker. A pool where one worker runs
// every session shows here (issue 38), whatever the throughput figures say.
import { temporal } from '@temporalio/proto';

const E = temporal.api.enums.v1.EventType;
/** The SDK's marker for a local activity's result. */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';
const SESSION_ACTIVITY = 'crawlSession';

export interface WorkerSessions {
  /** Sessions started on the worker: first (local) ones and the task queue's. */
  sessions: number;
  /** Of which hosts' first sessions, run locally in a workflow task. */
  firstSessions: number;
  /** Pages the sessions that completed there reported. */
  pages: number;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const decode = (p?: temporal.api.common.v1.IPayloads | null): unknown => {
  const data = p?.payloads?.[0]?.data;
  if (!data) return null;
  try {
    return JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return null;
  }
};
const pagesOf = (result: unknown): number => {
  const n = (result as { pages?: unknown } | null)?.pages;
  return typeof n === 'number' ? n : 0;
};

const timeOf = (e: HistoryEvent): number => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.round((e.eventTime?.nanos ?? 0) / 1e6);

/**
 * Adds one run's host sessions to `by` (worker identity → its sessions), and
 * to `queueWaitsMs` how long each session from the task queue waited there
 * for a worker to take it (its first attempt's): a pool that takes a burst of
 * sessions slowly shows here.
 */
export function tallySessions(events: HistoryEvent[], by: Map<string, WorkerSessions>, queueWaitsMs?: number[]): void {
  const of = (identity: string): WorkerSessions => {
    let w = by.get(identity);
    if (!w) by.set(identity, (w = { sessions: 0, firstSessions: 0, pages: 0 }));
    return w;
  };
  const sessionScheduled = new Map<number, number>();
  let lastTaskIdentity: string | null = null;
  for (const e of events) {
    const id = Number(e.eventId);
    switch (e.eventType) {
      case E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        if (e.activityTaskScheduledEventAttributes?.activityType?.name === SESSION_ACTIVITY) sessionScheduled.set(id, timeOf(e));
        break;
      case E.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const a = e.activityTaskStartedEventAttributes!;
        // Retries are one event too (its attempt count): each attempt that started is a session run there.
        const scheduled = sessionScheduled.get(Number(a.scheduledEventId));
        if (scheduled === undefined) break;
        of(a.identity ?? '?').sessions++;
        if ((a.attempt ?? 1) <= 1) queueWaitsMs?.push(timeOf(e) - scheduled);
        break;
      }
      case E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
        const a = e.activityTaskCompletedEventAttributes!;
        if (sessionScheduled.has(Number(a.scheduledEventId))) of(a.identity ?? '?').pages += pagesOf(decode(a.result));
        break;
      }
      case E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        lastTaskIdentity = e.workflowTaskCompletedEventAttributes?.identity ?? null;
        break;
      case E.EVENT_TYPE_MARKER_RECORDED: {
        const m = e.markerRecordedEventAttributes!;
        if (m.markerName !== LOCAL_ACTIVITY_MARKER) break;
        const data = decode(m.details?.data) as { activity_type?: string; activityType?: string } | null;
        if ((data?.activity_type ?? data?.activityType) !== SESSION_ACTIVITY) break;
        const w = of(lastTaskIdentity ?? '?');
        w.sessions++;
        w.firstSessions++;
        w.pages += pagesOf(decode(m.details?.result));
        break;
      }
    }
  }
}

/** The process ID in the SDK's default worker identity (`pid@host`), or null. */
export function identityPid(identity: string): number | null {
  const m = /^(\d+)@/.exec(identity);
  return m ? Number(m[1]) : null;
}
