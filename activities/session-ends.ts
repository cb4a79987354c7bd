// A session's end reaches the Temporal server only if the server is there when
// the worker reports it. The SDK retries that report for a few seconds; a server
// down for longer (a restart on a slow disk, an upgrade, a network partition)
// never hears that the session ended, and its host would wait for the session
// heartbeat timeout (5 min) before the server ran it again. So the worker keeps
// each ended session in mind until its end is known to have got there:
// - the usual case, cheaply: the server answered a probe (GetSystemInfo) that
//   began a second after the session ended, and no probe failed since the end;
// - after an outage, exactly: once the server has answered again for a while,
//   DescribeWorkflowExecution says whether the attempt is still started there.
//   If it is, the worker tells the host its session is lost (as for a dead
//   worker's), and the host goes on at once.
// The session's record under the worker's lease (activities/worker-liveness.ts)
// goes when it ends, so the lease names only running sessions, except on a
// stopping worker: there the record stays until the end is settled, and one the
// worker cannot settle (the server is away) stays recorded when it leaves (a
// worker killed mid-stop leaves them too); its lease runs out, and a live worker
// tells the host once the server is back.
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import type { Logger } from '../src/log/logger';
import type { SessionRecord } from '../src/redis/worker-registry';

const PendingActivityState = proto.api.enums.v1.PendingActivityState;
/** gRPC's NOT_FOUND: the run ended (or is unknown). */
const GRPC_NOT_FOUND = 5;
/** The SDK sends a session's result as the activity returns: a probe that began this long after the end saw the server after it. */
const REPORT_MS = 1_000;
/** How long a probe or a describe waits for the server. */
const ASK_DEADLINE_MS = 2_000;
/** After an outage, the server answers this long before its runs are described: the SDK's own retries deliver what they still hold first. */
const BACK_FOR_MS = 3_000;
/** Runs described at once. */
const AT_ONCE = 16;

/** The activity attempt that ran a session: which of the run's pending activities would still be it. */
export interface SessionAttempt {
  activityId: string;
  attempt: number;
}

/** A session that ended, as its worker recorded it. */
export interface EndedSession<R> {
  reg: R;
  record: SessionRecord;
  ran: SessionAttempt;
  endedAt: number;
  /** Its record is still under the lease (it ended on a stopping worker). */
  recorded: boolean;
}

export interface SessionEndsDeps<R> {
  temporal: Client;
  namespace: string;
  log: Logger;
  /** The session's record goes from under the lease. */
  unregister(reg: R): Promise<void>;
  /** The session is recorded under the lease again (the worker stops, and cannot tell whether its end got there). */
  record(reg: R): Promise<void>;
  /** Tells the host's run its session `r.session` is lost (it starts the next one at once). */
  tell(r: SessionRecord): Promise<void>;
  now?: () => number;
}

export class SessionEnds<R> {
  private pending: EndedSession<R>[] = [];
  /** When the last failed probe failed, and when the last answered probe began (this process's clock). */
  private lastFailAt = Number.NEGATIVE_INFINITY;
  private lastOkStart = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;

  constructor(private readonly deps: SessionEndsDeps<R>) {
    this.now = deps.now ?? Date.now;
  }

  /** Session `record` (attempt `ran`) ended; `recorded`: its record stays under the lease until settled. */
  ended(reg: R, record: SessionRecord, ran: SessionAttempt, recorded: boolean): void {
    this.pending.push({ reg, record, ran, endedAt: this.now(), recorded });
  }

  /** One beat of the worker's lease: probes the server while anything waits, and settles what it can. */
  async beat(): Promise<void> {
    if (this.pending.length === 0) return;
    await this.probe();
    const clean: EndedSession<R>[] = [];
    const doubtful: EndedSession<R>[] = [];
    const keep: EndedSession<R>[] = [];
    const backLongEnough = this.lastOkStart - this.lastFailAt >= BACK_FOR_MS;
    for (const e of this.pending) {
      if (this.lastFailAt < e.endedAt && this.lastOkStart >= e.endedAt + REPORT_MS) clean.push(e);
      else if (this.lastFailAt >= e.endedAt && backLongEnough) doubtful.push(e);
      else keep.push(e);
    }
    this.pending = keep;
    await Promise.all(clean.map((e) => this.settled(e)));
    this.pending.push(...(await this.settleByAsking(doubtful)));
  }

  /**
   * The worker begins to stop (it may be killed before it ends): each ended session not yet
   * settled is recorded under the lease again, so a worker killed before stop() leaves it to a
   * live worker to tell.
   */
  async stopping(): Promise<void> {
    for (const e of this.pending) {
      if (e.recorded) continue;
      await this.deps.record(e.reg).catch(() => undefined);
      e.recorded = true;
    }
  }

  /**
   * The worker stops, its sessions ended and their results sent: each end not yet settled is looked
   * up at the server. One the server cannot say of stays recorded under the lease (the lease then
   * runs out, and a live worker tells its host). Returns how many.
   */
  async stop(): Promise<number> {
    await this.stopping();
    const left = await this.settleByAsking(this.pending.splice(0));
    return left.length;
  }

  private async settled(e: EndedSession<R>): Promise<void> {
    if (e.recorded) await this.deps.unregister(e.reg).catch(() => undefined);
  }

  private async probe(): Promise<void> {
    const began = this.now();
    try {
      await this.deps.temporal.connection.withDeadline(began + ASK_DEADLINE_MS, () => this.deps.temporal.workflowService.getSystemInfo({}));
      this.lastOkStart = began;
    } catch {
      this.lastFailAt = this.now();
    }
  }

  /** Looks each session up at the server: gone or retried, it is settled; still started there, its host is told first. Returns those left in doubt. */
  private async settleByAsking(ended: EndedSession<R>[]): Promise<EndedSession<R>[]> {
    const left: EndedSession<R>[] = [];
    const queue = [...ended];
    const one = async () => {
      for (let e = queue.shift(); e; e = queue.shift()) {
        try {
          if (!(await this.endReached(e.record, e.ran))) {
            this.deps.log.info('a session ended while the Temporal server was away, which never heard of it: its host is told', {
              workflowId: e.record.workflowId,
              session: e.record.session,
            });
            await this.deps.tell(e.record);
          }
          await this.settled(e);
        } catch {
          left.push(e);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(AT_ONCE, queue.length) }, one));
    return left;
  }
  /** Whether the server has the end of attempt `ran` of a session of run `r`: it is no longer started there. Throws when the server does not answer. */
  private async endReached(r: SessionRecord, ran: SessionAttempt): Promise<boolean> {
    let described;
    try {
      described = await this.deps.temporal.connection.withDeadline(this.now() + ASK_DEADLINE_MS, () =>
        this.deps.temporal.workflowService.describeWorkflowExecution({ namespace: this.deps.namespace, execution: { workflowId: r.workflowId, runId: r.runId } }),
      );
    } catch (err) {
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return true;
      throw err;
    }
    if (described.workflowExecutionInfo?.closeTime) return true;
    // Its retry (a later attempt), or nothing pending under its id: the end got there.
    return !(described.pendingActivities ?? []).some(
      (a) => a.activityId === ran.activityId && a.attempt === ran.attempt && a.state !== PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
    );
  }
}
