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
import type { Client } from '@temporalio/client';
import type { Logger } from '../src/log/logger';
import { WorkerRegistry, type SessionRecord } from '../src/redis/worker-registry';
import type { RedisLike } from '../src/redis/scripts';
import { signalRunIfRunning } from '../src/temporal/signal';
import { sessionLostSignal } from '../workflows/messages';

/** A lease is renewed this many times over its length: a beat or two lost to a slow Redis call or a busy thread costs nothing. */
export const BEATS_PER_LEASE = 6;
/** Expired workers one beat looks at (more wait for the next beat). */
const EXPIRED_PER_BEAT = 20;
/** Hosts told at once while cleaning up after a dead worker. */
const TELL_AT_ONCE = 16;
/** gRPC's NOT_FOUND: the run ended (or is unknown). */
const GRPC_NOT_FOUND = 5;

export interface LivenessOptions {
  /** How long the lease lasts without a renewal (ms). */
  leaseMs: number;
  namespace: string;
  log: Logger;
  /** Stands for the process in worker ids (default: host name and pid). */
  name?: string;
}

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
  private readonly name: string;
  private currentId: string;
  private joined: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private beating: Promise<void> | null = null;
  private stopped = false;
  /** Workers this process tells the hosts of now (one beat's cleanup may outlast the beat). */
  private readonly reaping = new Set<string>();

  constructor(
    redis: RedisLike,
    private readonly temporal: Client,
    private readonly opts: LivenessOptions,
  ) {
    this.registry = new WorkerRegistry(redis);
    this.beatMs = Math.max(50, Math.floor(opts.leaseMs / BEATS_PER_LEASE));
    this.claimMs = Math.max(10_000, 2 * opts.leaseMs);
    this.name = opts.name ?? `${os.hostname()}-${process.pid}`;
    this.currentId = this.newId();
  }

  /** The id this process holds its lease under now. */
  get id(): string {
    return this.currentId;
  }

  private newId(): string {
    return `${this.name}-${randomBytes(4).toString('hex')}`;
  }

  /** Joins and starts beating. */
  async start(): Promise<void> {
    await this.join();
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
    return records.length;
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

  async unregister(reg: Registration): Promise<void> {
    await this.registry.unregister(reg.workerId, reg.record);
  }

  /** Stops beating; leaves when none of this process's sessions is recorded any more (else its lease runs out and its hosts are told). */
  async stop(): Promise<boolean> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    return this.registry.leave(this.currentId).catch(() => false);
  }
}
