// A session the server hands a worker as it stops, which the worker never runs.
// On SIGTERM a worker asks the server to end its long polls (ShutdownWorker,
// src/stack/temporal-dev-server.ts) and waits for them. Yet a host's next
// session, scheduled the instant the host's session ended here because the
// worker drained, was still recorded started by this worker and never reached
// its code: no session start, no record under the lease, no end. Nothing but
// the session heartbeat timeout (5 min) moved that host on (graceful.test.ts,
// one run in 9 to 17; the server's history names this worker as the one that
// started it).
//
// So a worker remembers the hosts whose sessions ended here lately or while it
// drained, and once its polls and activities have all ended, it looks each host's
// run up: a session of it still started by this worker's identity is one this
// worker will never run. Its number is read from the run's history (the
// activity's input), and the run is told the session is lost, as a dead
// worker's hosts are (activities/worker-liveness.ts): it starts the next one at
// once, on a live worker. A session handed over at that instant whose host
// had no session end here (a host waking from a long sleep right then) is left
// to the heartbeat timeout.
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal as proto } from '@temporalio/proto';
import type { Logger } from '../src/log/logger';
import { signalRunIfRunning } from '../src/temporal/signal';
import { sessionLostSignal } from '../workflows/messages';
import type { SessionInput } from './types';

const PendingActivityState = proto.api.enums.v1.PendingActivityState;
const EventType = proto.api.enums.v1.EventType;
/** gRPC's NOT_FOUND: the run ended (or is unknown). */
const GRPC_NOT_FOUND = 5;
/** A session that ended this long before the worker began to stop may have had its next one handed to the stopping worker's polls. */
export const RECENT_END_MS = 30_000;
/** Hosts looked up at once, and how long the look may hold the worker's exit. */
const AT_ONCE = 16;
const LOOK_MS = 10_000;

/** A host's workflow run, as a session of it knew it. */
interface HostRun {
  workflowId: string;
  runId: string;
}

export class UnrunSessions {
  /** Host workflow id → when a session of it last ended here. */
  private readonly ended = new Map<string, number>();
  private stoppingSince: number | null = null;

  constructor(
    private readonly temporal: Client,
    private readonly opts: { namespace: string; identity: string; log: Logger; now?: () => number; lookMs?: number },
  ) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /**
   * A session of host workflow `workflowId` ended on this worker (run locally or from the task queue,
   * finished or failed). Its workflow id, not its run: the next session may be a newer run's.
   */
  sessionEnded(workflowId: string): void {
    const now = this.now();
    this.ended.delete(workflowId);
    this.ended.set(workflowId, now);
    // Oldest first (re-set moves a host to the end): what ended too long ago to matter goes, unless the worker stops.
    if (this.stoppingSince !== null) return;
    for (const [id, at] of this.ended) {
      if (now - at < RECENT_END_MS) break;
      this.ended.delete(id);
    }
  }

  /** The worker begins to stop: from now on every session end is kept. */
  stopping(): void {
    this.stoppingSince ??= this.now();
  }

  /**
   * The worker's polls and activities have all ended: each remembered host whose run has a session
   * still started by this worker is told it is lost. Returns the hosts told.
   */
  async tell(): Promise<string[]> {
    const since = (this.stoppingSince ?? this.now()) - RECENT_END_MS;
    const queue = [...this.ended].filter(([, at]) => at >= since).map(([id]) => id);
    this.ended.clear();
    const told: string[] = [];
    const until = this.now() + (this.opts.lookMs ?? LOOK_MS);
    const next = async () => {
      for (let id = queue.shift(); id !== undefined && this.now() < until; id = queue.shift()) {
        try {
          // Bounded as a whole: a server away must not hold the worker's exit (each call would retry).
          const host = id;
          if (await this.temporal.connection.withDeadline(until, () => this.tellIfUnrun(host))) told.push(id);
        } catch (err) {
          this.opts.log.warn('could not look up a host whose session ended as this worker stopped', { workflowId: id, error: err instanceof Error ? err.message : String(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, queue.length) }, next));
    if (queue.length > 0) this.opts.log.warn('stopped looking up hosts whose session ended as this worker stopped', { left: queue.length, afterMs: this.opts.lookMs ?? LOOK_MS });
    return told;
  }

  /** True when the host's open run had a session started by this worker, and was told it is lost. */
  private async tellIfUnrun(workflowId: string): Promise<boolean> {
    const { namespace, identity } = this.opts;
    let described;
    try {
      described = await this.temporal.workflowService.describeWorkflowExecution({ namespace, execution: { workflowId } });
    } catch (err) {
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return false;
      throw err;
    }
    const info = described.workflowExecutionInfo;
    const runId = info?.execution?.runId;
    if (!runId || info?.closeTime) return false;
    const unrun = (described.pendingActivities ?? []).filter(
      (a) => a.activityType?.name === 'crawlSession' && a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === identity,
    );
    let told = false;
    for (const a of unrun) {
      const session = await this.sessionNumber({ workflowId, runId }, a.activityId ?? '');
      if (session === null) continue;
      this.opts.log.warn('a session handed to this worker as it stopped was never run here; its host is told', { workflowId, session, attempt: a.attempt ?? undefined });
      told = (await signalRunIfRunning(this.temporal, { workflowId, runId }, sessionLostSignal, { session })) || told;
    }
    return told;
  }

  /** The session number (SessionInput.session) the run scheduled activity `activityId` with; null when it has none (a legacy first session). */
  private async sessionNumber(run: HostRun, activityId: string): Promise<number | null> {
    const handle = this.temporal.workflow.getHandle(run.workflowId, run.runId);
    const { events } = await handle.fetchHistory();
    for (const e of events ?? []) {
      const a = e.activityTaskScheduledEventAttributes;
      if (e.eventType !== EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED || a?.activityId !== activityId) continue;
      const payload = a.input?.payloads?.[0];
      const input = payload ? defaultPayloadConverter.fromPayload<SessionInput>(payload as Payload) : null;
      return typeof input?.session === 'number' ? input.session : null;
    }
    return null;
  }
}
