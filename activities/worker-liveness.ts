// A worker process's liveness, off Temporal's heartbeat (docs/architecture.md,
// "Liveness"): the process renews a lease in Redis several times a second,
// records each regular host session it runs, and watches the other workers'
// leases. When a lease runs out, one live worker takes that worker's cleanup
// and tells each host workflow run whose session ran there that it is lost
// (sessionLostSignal): the run abandons it and starts the next session at
// once, on a live worker. Temporal's heartbeat timeout stays as the safety
// net (a worker whose Redis is gone, liveness turned off).
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import type { Logger } from '../src/log/logger';
import { WorkerRegistry, type SessionRecord } from '../src/redis/worker-registry';
import type { RedisLike } from '../src/redis/scripts';
import { signalRunIfRunning } from '../src/temporal/signal';
import { sessionLostSignal } from '../workflows/messages';
import { SessionEnds, type SessionAttempt } from './session-ends';
import { UnrunSessions } from './unrun-sessions';

const PendingActivityState = proto.api.enums.v1.PendingActivityState;

/** A lease is renewed this many times over its length: a beat or two lost to a slow Redis call or a busy thread costs nothing. */
export const BEATS_PER_LEASE = 6;
/** Expired workers one beat looks at (more wait for the next beat). */
const EXPIRED_PER_BEAT = 20;
/** Hosts told at once while cleaning up after a dead worker. */
const TELL_AT_ONCE = 16;
/**
 * How long the runs told of a dead worker are watched for a session handed to its leftover polls:
 * the server answers a long poll empty after about a minute, and from then on gives it nothing.
 */
const FOLLOW_UP_MS = 75_000;
/** gRPC's NOT_FOUND: the run ended (or is unknown). */
const GRPC_NOT_FOUND = 5;

export interface LivenessOptions {
  /** How long the lease lasts without a renewal (ms). */
  leaseMs: number;
  namespace: string;
  log: Logger;
  /**
   * The worker's identity as Temporal knows it (the SDK's default, `<pid>@<host name>`): worker ids
   * start with it, so a live worker can tell which activity tasks a dead one took.
   */
  identity?: string;
  /** A registry apart from the workers' own (tests: WorkerRegistry's `group`). */
  group?: string;
}

/** Between the identity and the random part of a worker id (host names have no `~`). */
const ID_CUT = '~';
/** The Temporal identity of the worker that holds (or held) lease `id`. */
export const identityOf = (id: string): string => id.slice(0, Math.max(0, id.lastIndexOf(ID_CUT)));
export const defaultIdentity = (): string => `${process.pid}@${os.hostname()}`;

/** A session as registered: under the worker id it was recorded with (a worker found dead joins again under another). */
export interface Registration {
  workerId: string;
  record: SessionRecord;
}

export class WorkerLiveness {
  readonly registry: WorkerRegistry;
  private readonly beatMs: number;
  /** How long a live worker holds a dead one's cleanup: one that dies meanwhile leaves it to another after this. */
  private readonly claimMs: number;
  private readonly identity: string;
  private currentId: string;
  private joined: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private stopped = false;
  /** Workers this process tells the hosts of now (one beat's cleanup may outlast the beat). */
  private readonly reaping = new Set<string>();
  /** Sessions that ended here, recorded until their end is known to have reached the server (./session-ends.ts). */
  private readonly ends: SessionEnds<Registration>;
  private settling: Promise<void> | null = null;
  /** Hosts whose sessions ended here lately: one whose next session the server handed this worker as it stopped is told (./unrun-sessions.ts). */
  private readonly unrun: UnrunSessions;

  constructor(
    redis: RedisLike,
    private readonly temporal: Client,
    private readonly opts: LivenessOptions,
  ) {
    this.registry = new WorkerRegistry(redis, opts.group);
    this.beatMs = Math.max(50, Math.floor(opts.leaseMs / BEATS_PER_LEASE));
    this.claimMs = Math.max(10_000, 2 * opts.leaseMs);
    this.identity = opts.identity ?? defaultIdentity();
    this.currentId = this.newId();
    this.unrun = new UnrunSessions(temporal, { namespace: opts.namespace, identity: this.identity, log: opts.log });
    this.ends = new SessionEnds({
      temporal,
      namespace: opts.namespace,
      log: opts.log,
      unregister: (reg) => this.registry.unregister(reg.workerId, reg.record),
      record: async (reg) => void (await this.registry.register(reg.workerId, reg.record)),
      tell: async (r) => {
        await signalRunIfRunning(this.temporal, { workflowId: r.workflowId, runId: r.runId }, sessionLostSignal, { session: r.session });
      },
    });
  }

  /** The id this process holds its lease under now. */
  get id(): string {
    return this.currentId;
  }

  private newId(): string {
    return `${this.identity}${ID_CUT}${randomBytes(4).toString('hex')}`;
  }

  /** Joins and starts beating. Redis unreachable: the worker starts anyway, and joins at a beat once it answers. */
  start(): void {
    void this.join().catch((err: unknown) => this.opts.log.warn('worker liveness: could not join yet', { error: err instanceof Error ? err.message : String(err) }));
    this.timer = setInterval(() => {
      if (this.beating) return;
      this.beating = this.beat().finally(() => (this.beating = null));
    }, this.beatMs);
  }

  private join(): Promise<void> {
    this.joined ??= this.registry.join(this.currentId, this.opts.leaseMs).catch((err: unknown) => {
      this.joined = null;
      throw err;
    });
    return this.joined;
  }

  /**
   * Found dead (its lease ran out: a frozen or starved process): the sessions recorded under the old
   * id are presumed lost (their hosts are told, or will be, and move on; fencing refuses what those
   * sessions still try to write), so none of them is recorded again: the process joins under a new id.
   */
  private rejoin(deadId: string): Promise<void> {
    if (this.currentId === deadId) {
      this.opts.log.warn('worker liveness: this worker was presumed dead (its lease ran out); its sessions are handed over, it joins again', {
        workerId: deadId,
      });
      this.currentId = this.newId();
      this.joined = null;
    }
    return this.join();
  }

  /** One beat: the lease renewed (or the process joins again), then the workers whose lease ran out cleaned up after. */
  async beat(): Promise<void> {
    try {
      await this.join();
      const id = this.currentId;
      const { live, expired } = await this.registry.beat(id, this.opts.leaseMs, EXPIRED_PER_BEAT);
      if (!live) await this.rejoin(id);
      for (const dead of expired) {
        if (this.stopped || this.reaping.has(dead)) continue;
        this.reaping.add(dead);
        void this.reap(dead).finally(() => this.reaping.delete(dead));
      }
      // Apart from the lease: a slow or absent Temporal server never holds a renewal up.
      if (!this.settling && !this.stopped) this.settling = this.ends.beat().finally(() => (this.settling = null));
    } catch (err) {
      // Redis unreachable: nothing to do but try again next beat (the lease may run out meanwhile).
      this.opts.log.warn('worker liveness: beat failed', { error: err instanceof Error ? err.message : String(err) });
    }
  }

  /**
   * Worker `dead`'s lease ran out: unless another worker does it, tell each host workflow run whose
   * session ran there. Each run's sticky task queue is reset first, so the signal's workflow task goes
   * to the task queue at once instead of waiting on the dead worker's sticky queue; the campaigns'
   * too (their workflows may have been cached there). When every run was told, the records go; when
   * not (Temporal unreachable), the claim runs out and a live worker tries again.
   */
  async reap(dead: string): Promise<number> {
    const since = Date.now();
    const records = await this.registry.claim(dead, this.currentId, this.claimMs);
    if (records === null) return 0;
    let failed = 0;
    const queue = [...records];
    const tell = async () => {
      for (let r = queue.shift(); r; r = queue.shift()) {
        try {
          await this.resetSticky(r.workflowId, r.runId);
          await signalRunIfRunning(this.temporal, { workflowId: r.workflowId, runId: r.runId }, sessionLostSignal, { session: r.session });
        } catch (err) {
          failed++;
          this.opts.log.warn('worker liveness: could not tell a host its session is lost', {
            workflowId: r.workflowId,
            error: err instanceof Error ? err.message : String(err),
          });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(TELL_AT_ONCE, queue.length) }, tell));
    for (const campaign of new Set(records.map((r) => r.campaignWorkflowId))) await this.resetSticky(campaign).catch(() => undefined);
    if (failed === 0) await this.registry.reaped(dead, this.currentId);
    this.opts.log.info('worker liveness: a worker was presumed dead, its hosts were told', { deadWorker: dead, sessions: records.length, failed });
    if (!this.stopped && records.length > 0) void this.followUp(identityOf(dead), records, since);
    return records.length;
  }

  /**
   * A worker that is frozen rather than gone (SIGSTOP, a paused VM) keeps its long polls open at the
   * server, which hands them tasks nobody will run: the next session of a host told above may be one
   * of them, and would wait for the heartbeat timeout. So for a while each told run is looked at
   * (DescribeWorkflowExecution): a session of it that the dead worker's identity started after the
   * loss is that run's next session (the run starts it at once), and is reported lost in turn. A run
   * whose next session started elsewhere, or that has none running, is left alone from then on.
   */
  private async followUp(deadIdentity: string, told: SessionRecord[], since: number): Promise<void> {
    // The lost sessions started before the worker froze, a lease before `since`; a session handed to
    // its leftover polls started after it was told, after `since`: half a lease apart either way.
    const after = since - this.opts.leaseMs / 2;
    let watching = told.map((r) => ({ ...r, reported: new Set<string>() }));
    while (watching.length > 0 && !this.stopped && Date.now() - since < FOLLOW_UP_MS) {
      await sleep(this.beatMs * 2);
      const still: typeof watching = [];
      for (const r of watching) {
        const verdict = await this.nextSessionOf(r, deadIdentity, after).catch(() => ({ kind: 'wait' as const }));
        if (verdict.kind === 'done') continue;
        if (verdict.kind === 'taken' && !r.reported.has(verdict.activityId)) {
          // Reported once: until the run hears of it the activity stays as it is.
          r.reported.add(verdict.activityId);
          r.session++;
          this.opts.log.info('worker liveness: a session was handed to the dead worker after all; told again', { workflowId: r.workflowId, session: r.session });
          await signalRunIfRunning(this.temporal, { workflowId: r.workflowId, runId: r.runId }, sessionLostSignal, { session: r.session }).catch(() => undefined);
        }
        still.push(r);
      }
      watching = still;
    }
  }

  /**
   * `taken`: a session of the run (its next one) was started by the dead worker after `after`; `wait`:
   * the next session has not started yet; `done`: it started elsewhere, none runs, or the run closed.
   */
  private async nextSessionOf(r: SessionRecord, deadIdentity: string, after: number): Promise<{ kind: 'taken'; activityId: string } | { kind: 'wait' | 'done' }> {
    let described;
    try {
      described = await this.temporal.workflowService.describeWorkflowExecution({ namespace: this.opts.namespace, execution: { workflowId: r.workflowId, runId: r.runId } });
    } catch (err) {
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return { kind: 'done' };
      throw err;
    }
    if (described.workflowExecutionInfo?.closeTime) return { kind: 'done' };
    const startedMs = (a: { lastStartedTime?: { seconds?: unknown; nanos?: number | null } | null }) =>
      Number(a.lastStartedTime?.seconds ?? 0) * 1000 + Math.floor((a.lastStartedTime?.nanos ?? 0) / 1e6);
    const sessions = (described.pendingActivities ?? []).filter((a) => a.activityType?.name === 'crawlSession');
    const taken = sessions.find((a) => a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === deadIdentity && startedMs(a) >= after);
    if (taken) return { kind: 'taken', activityId: taken.activityId ?? '' };
    // The lost session (cancel requested, or not yet: the run has not heard yet) aside, is another one waiting to start?
    const next = sessions.filter((a) => a.lastWorkerIdentity !== deadIdentity || startedMs(a) >= after);
    if (next.some((a) => a.state === PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED)) return { kind: 'wait' };
    if (next.length > 0) return { kind: 'done' };
    // Nothing but the lost session: the run has not heard of the loss yet (its task waits), or it moved on to a sleep.
    return sessions.some((a) => a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && a.lastWorkerIdentity === deadIdentity) ? { kind: 'wait' } : { kind: 'done' };
  }

  /** The run's next workflow task goes to the task queue (any live worker), not to a sticky queue a dead worker no longer polls. */
  private async resetSticky(workflowId: string, runId?: string): Promise<void> {
    try {
      await this.temporal.workflowService.resetStickyTaskQueue({ namespace: this.opts.namespace, execution: { workflowId, runId } });
    } catch (err) {
      // A run that ended (or never had a sticky queue) has nothing to reset.
      if ((err as { code?: number }).code === GRPC_NOT_FOUND) return;
      throw err;
    }
  }

  /**
   * A regular session starts on this worker: recorded under the current id. Found dead meanwhile
   * (the lease ran out), the process joins again and records it under the new id.
   */
  async register(record: SessionRecord): Promise<Registration> {
    await this.join();
    let workerId = this.currentId;
    if (!(await this.registry.register(workerId, record))) {
      await this.rejoin(workerId);
      workerId = this.currentId;
      await this.registry.register(workerId, record);
    }
    return { workerId, record };
  }

  /**
   * A session ended here (`ran`: its activity attempt). Its record goes, but the worker keeps it in
   * mind until its end is known to have reached the server (./session-ends.ts): a server away when
   * the result was sent never gets it, and the host would wait for the heartbeat timeout. On a
   * stopping worker the record stays until then: the worker may be killed before it can tell.
   */
  async ended(reg: Registration, ran: SessionAttempt, stopping: boolean): Promise<void> {
    if (!stopping) await this.registry.unregister(reg.workerId, reg.record).catch(() => undefined);
    this.ends.ended(reg, reg.record, ran, stopping);
  }

  /** A session of host workflow `workflowId` ended on this worker, whether it ran locally or from the task queue, and however it ended. */
  sessionEnded(workflowId: string): void {
    this.unrun.sessionEnded(workflowId);
  }

  /** The worker begins to stop: sessions ended but not settled are recorded again (./session-ends.ts), in case it is killed before stop(). */
  stopping(): Promise<void> {
    this.unrun.stopping();
    return this.ends.stopping();
  }

  /**
   * Once the worker's polls and activities have all ended: tells the hosts whose next session the
   * server handed this worker as it stopped (./unrun-sessions.ts); stops beating; settles the
   * sessions that ended (their results are sent by now); leaves when none of this process's
   * sessions is recorded any more (else its lease runs out and its hosts are told).
   */
  async stop(): Promise<boolean> {
    await this.unrun.tell().catch((err: unknown) => this.opts.log.warn('worker liveness: could not look for sessions handed over as it stopped', { error: String(err) }));
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    await this.settling;
    await this.ends.stop();
    return this.registry.leave(this.currentId).catch(() => false);
  }
}
