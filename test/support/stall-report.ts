// What a campaign that a test waits on is doing, written to the test file's
// worker log (test/support/worker-logs.ts) while the wait goes on: a stalled
// campaign otherwise ends in a bare "Exceeded timeout" with nothing to say
// which host waited on what.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** Open workflows on the task queue, each with its pending activities and last history events. */
export async function stallReport(client: Client, taskQueue: string, limit = 8): Promise<string[]> {
  const lines: string[] = [];
  let n = 0;
  for await (const wf of client.workflow.list({ query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'` })) {
    if (n++ >= limit) {
      lines.push('  …more open workflows');
      break;
    }
    const handle = client.workflow.getHandle(wf.workflowId, wf.runId);
    const described = await handle.describe();
    const pending = described.raw.pendingActivities ?? [];
    // Who took an activity and when: a session handed to a worker that then left waits for its heartbeat timeout.
    const at = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
      t?.seconds ? new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString() : '-';
    const acts = pending.map(
      (a) =>
        `${a.activityType?.name} state=${a.state} attempt=${a.attempt} scheduled=${at(a.scheduledTime)} started=${at(a.lastStartedTime)} by=${a.lastWorkerIdentity || '-'} lastFailure=${a.lastFailure?.message ?? '-'}`,
    );
    const events = ((await handle.fetchHistory()).events ?? []).map((e) => temporal.api.enums.v1.EventType[e.eventType ?? 0]?.replace('EVENT_TYPE_', ''));
    lines.push(`  ${wf.type} ${wf.workflowId} events=${events.length} last=[${events.slice(-5).join(',')}] pending=[${acts.join('; ')}]`);
  }
  if (n === 0) lines.push('  no open workflow on the task queue');
  return lines;
}

/** `result`, with a stall report in the log every `everyMs` it is still pending. */
export async function watchedResult<T>(result: Promise<T>, report: () => Promise<string[]>, log: (line: string) => void, everyMs = 60_000): Promise<T> {
  const started = Date.now();
  const timer = setInterval(() => {
    void report().then(
      (lines) => log(`campaign still running after ${Math.round((Date.now() - started) / 1000)} s:\n${lines.join('\n')}`),
      (err: Error) => log(`stall report failed: ${err.message}`),
    );
  }, everyMs);
  timer.unref();
  try {
    return await result;
  } finally {
    clearInterval(timer);
  }
}
