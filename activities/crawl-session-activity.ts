// The crawlSession activity: a host session (activities/crawl-session.ts),
// unless it is a host's first session, run locally on the worker that runs
// the host's first workflow task, past its campaign's share of this worker's
// local sessions (activities/local-share.ts) or while this worker is full
// (src/worker/worker-load.ts): that one ends at once without a page, and the
// host goes on through the task queue, to a worker with room. A session that
// failed because Redis was unreachable rides the outage out and retries at
// once (activities/redis-outage.ts).
import { Context } from '@temporalio/activity';
import { hostStatsOf } from '../src/stats/counters';
import { HostSession } from './crawl-session';
import { afterRedisFailure, sessionProbeKeys } from './redis-outage';
import type { WorkerRuntime } from './runtime';
import type { SessionInput, SessionResult } from './types';
import type { Registration } from './worker-liveness';

export function crawlSessionActivity(rt: WorkerRuntime) {
  return async function crawlSession(input: SessionInput): Promise<SessionResult> {
    try {
      return await placeSession(rt, input);
    } finally {
      // The host's next session is scheduled now: one the server hands this worker as it stops is looked for (activities/unrun-sessions.ts).
      const workflowId = Context.current().info.workflowExecution?.workflowId;
      if (workflowId) rt.deps.liveness?.sessionEnded(workflowId);
    }
  };
}

async function placeSession(rt: WorkerRuntime, input: SessionInput): Promise<SessionResult> {
  if (!input.local) {
    rt.localShare.touch(input.campaignKey);
    return runSession(rt, input);
  }
  const load = rt.deps.load;
  if (load && !(await load.admitFirstSession())) {
    rt.localShare.touch(input.campaignKey);
    return deferredSession(input, FULL);
  }
  if (!rt.localShare.tryEnter(input.campaignKey)) return deferredSession(input, SHARED);
  load?.started();
  try {
    return await runSession(rt, input);
  } finally {
    load?.ended();
    rt.localShare.leave(input.campaignKey);
  }
}

async function runSession(rt: WorkerRuntime, input: SessionInput): Promise<SessionResult> {
  // Counted from before it opens: the session that waits on its host's robots.txt warm-up is
  // what keeps the warm-up's connection open for it (activities/robots.ts).
  rt.sessionOpened(input.campaignKey, input.host);
  // Recorded before it takes the host over: a worker that dies from then on is found by its lease.
  const registration = await registerSession(rt, input);
  let session: HostSession | null = null;
  try {
    session = await HostSession.open(rt, input);
    try {
      return await session.run();
    } finally {
      session.close();
    }
  } catch (err) {
    throw await rideOutRedis(rt, input, err, session);
  } finally {
    rt.sessionClosed(input.campaignKey, input.host);
    if (registration) await settleRegistration(rt, registration);
  }
}

/** The session ended: its record goes (on a stopping worker, once its end is known to have reached the server: activities/session-ends.ts). */
async function settleRegistration(rt: WorkerRuntime, registration: Registration): Promise<void> {
  const { activityId, attempt } = Context.current().info;
  await rt.deps.liveness?.ended(registration, { activityId, attempt }, rt.draining);
}

/**
 * A regular session the host's workflow numbered (SessionInput.session) is recorded under this
 * worker's lease, so that the host is told within seconds when this worker dies. A host's first
 * session runs inside its workflow's task instead: the task's timeout is its lease.
 */
async function registerSession(rt: WorkerRuntime, input: SessionInput): Promise<Registration | null> {
  const liveness = rt.deps.liveness;
  if (!liveness || input.local || input.session === undefined) return null;
  const { workflowExecution } = Context.current().info;
  if (!workflowExecution?.runId) return null;
  try {
    return await liveness.register({
      workflowId: workflowExecution.workflowId,
      runId: workflowExecution.runId,
      session: input.session,
      campaignWorkflowId: input.campaignWorkflowId,
    });
  } catch (err) {
    // Redis unreachable: the session runs anyway, found by Temporal's heartbeat timeout if this worker dies.
    rt.log.warn('session not recorded under the worker lease', { host: input.host, error: err instanceof Error ? err.message : String(err) });
    return null;
  }
}

/**
 * `err`, or (Redis was unreachable and answers again) a failure whose retry starts at once. No
 * heartbeat while it waits: the ride-out (REDIS_OUTAGE.rideOutMs) is far inside the heartbeat
 * timeout, and a beat is a billable action.
 */
function rideOutRedis(rt: WorkerRuntime, input: SessionInput, err: unknown, session: HostSession | null): Promise<unknown> {
  return afterRedisFailure(rt.deps.redis, sessionProbeKeys(input.campaignKey, input.host), err, {
    signal: Context.current().cancellationSignal,
    onBack: async () => session?.noteOutage(),
  });
}

const SHARED = 'first session deferred: campaigns share this worker, and this one holds its share of local sessions';
const FULL = "first session deferred: this worker's thread is saturated, so the host's sessions go to a worker with room";

/** A first session that fetched nothing and hands the host to a regular session at once ('cap'). */
export function deferredSession(input: SessionInput, reason = SHARED): SessionResult {
  return {
    end: 'cap',
    waitMs: 0,
    backingOff: false,
    released: false,
    stop: null,
    configVersion: input.configVersion,
    pages: 0,
    stats: hostStatsOf(),
    frontier: 0,
    delayMs: 0,
    reason,
    lastUrl: null,
    lastStatus: null,
  };
}
