// One worker process: runs workflow tasks and activities from the task
// queue. More processes (on any machine) = more capacity; killing one loses
// nothing, Temporal hands its tasks to the others.
import { BOOKKEEPING_LOCAL_SLOTS } from '../../activities/local-share';
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createLogger, TemporalLoggerAdapter } from '../log/logger';
import { CrawlMetrics } from '../metrics/crawl-metrics';
import { startMetricsServer } from '../metrics/metrics-server';
import { temporalRuntimeTelemetry } from '../metrics/temporal-telemetry';
import { createActivities, WorkerRuntime } from '../../activities';
import { defaultIdentity, WorkerLiveness } from '../../activities/worker-liveness';
import { processSettings, type ProcessSettings } from '../config/env';
import { SESSION_HEARTBEAT } from '../config/retry-policy';
import { createRedis } from '../redis/client';
import { sharedDnsCache } from '../http/dns-cache';
import { temporalConnectionOptions } from '../temporal/connect';
import { ensureWorkflowBundle, WORKFLOWS_PATH } from './workflow-bundle';
import { chromiumProblem, findOrInstallChromium } from '../stack/chromium';
import { outputCacheRoot } from '../stack/paths';
import { childProcessesTime, mainThreadTime, WorkerLoad } from './worker-load';
import { sessionSlotSupplier } from './session-slot-supplier';
import { DEFAULT_SPOOL_DIR } from '../stack/paths';
import { NO_LIVENESS_SPOOLER } from '../redis/output-flush';
import { openWorkerSpool } from './worker-spool';

/** The SDK's default for Nexus tasks, which the crawler does not use; a tuner must name every kind. */
const NEXUS_SLOTS = 100;

let runtimeInstalled = false;

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has shut down and everything is closed. */
  done: Promise<void>;
  /** The worker's Prometheus endpoint, when CRAWLER_METRICS_PORT is set. */
  metricsUrl: string | null;
  shutdown(): Promise<void>;
}

export async function startCrawlerWorker(overrides: Partial<ProcessSettings> = {}): Promise<RunningWorker> {
  const cfg = processSettings(process.env, overrides);
  const log = createLogger({ level: cfg.logLevel }).child({ pid: process.pid });
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    Runtime.install({
      // Worker, workflow and activity logs of the SDK come out as our JSON lines.
      logger: new TemporalLoggerAdapter(log),
      telemetryOptions: temporalRuntimeTelemetry(cfg.sdkMetricsPort === null ? null : `${cfg.metricsHost}:${cfg.sdkMetricsPort}`),
    });
  }
  // Certificates are read (and a missing file reported) before anything connects.
  const temporalOptions = temporalConnectionOptions(cfg);
  const redis = createRedis(cfg.redisUrl);
  const nativeConnection = await NativeConnection.connect(temporalOptions);
  // The activities' client (signals to campaigns) rides the worker's native
  // connection: one gRPC channel per worker, in the SDK's Rust core, instead
  // of a second one in JavaScript on the main thread.
  const temporal = new Client({ connection: nativeConnection, namespace: cfg.temporalNamespace });
  const metrics = new CrawlMetrics();
  // This process's load: where a new session runs is decided by it (issue 38).
  const load = new WorkerLoad(mainThreadTime(), Date.now, childProcessesTime()).start();
  // This process's lease in Redis and its watch over the others' (activities/worker-liveness.ts).
  // The SDK's default identity, named here so that the lease says which worker's tasks are whose.
  const identity = defaultIdentity();
  const liveness = cfg.workerLeaseMs > 0 ? new WorkerLiveness(redis, temporal, { leaseMs: cfg.workerLeaseMs, namespace: cfg.temporalNamespace, log, identity }) : undefined;
  // Before the first task: what a worker that died here left in the spool goes up first. A seal of a
  // campaign in object storage asks its spoolers to upload what they hold (src/redis/output-flush.ts):
  // this worker is one under its lease's id, or, without liveness, one never presumed dead.
  const spool = await openWorkerSpool({ root: cfg.spoolDir ?? DEFAULT_SPOOL_DIR, redis, log, spoolerId: () => liveness?.id ?? `${NO_LIVENESS_SPOOLER}${identity}` });
  const rt = new WorkerRuntime({
    spool: spool.uploader,
    liveness,
    redis,
    temporal,
    eagerStart: true,
    localSessionSlots: cfg.activitySlots,
    load,
    // Every name this worker's connections resolve: the hosts file first.
    dnsCache: sharedDnsCache(cfg.hostsFile),
    metrics,
    log,
    chromium: () => findOrInstallChromium({ log: (m) => log.info(m) }),
    chromiumProblem,
    outputCacheRoot: outputCacheRoot(),
  });
  const bundlePath = cfg.workflowBundlePath ?? (await ensureWorkflowBundle().catch(() => null));
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: cfg.temporalNamespace,
    taskQueue: cfg.taskQueue,
    identity,
    // By path, not as code: the SDK reads the file and hands it to its
    // workflow thread, while code passed in stays referenced by the worker's
    // options for its whole life (3 MB of file, a 6 MB string in the main heap).
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities(rt),
    tuner: {
      // Activities are mostly host sessions, which wait on the network and the
      // host clock, not the CPU: a worker keeps hundreds of slow hosts in
      // flight. But it takes a new one from the task queue only while its
      // thread has room (src/worker/session-slot-supplier.ts), so a few busy
      // hosts are spread over the pool instead of saturating one worker.
      activityTaskSlotSupplier: sessionSlotSupplier(load, cfg.activitySlots),
      // A host's first session runs as a local activity in its workflow's first
      // task (workflows/domain-crawl.ts): the same work as a session from the
      // queue, so as many of them; the campaign's own short local activities
      // share these slots.
      localActivityTaskSlotSupplier: { type: 'fixed-size', numSlots: cfg.activitySlots + BOOKKEEPING_LOCAL_SLOTS },
      // The SDK's default is 40. A new host's workflow is started eagerly (its
      // first task handed back with the start) only while this worker has a
      // slot free, and a task that runs a local activity holds its slot until
      // the activity ends: with 40, a dispatch of hundreds of hosts sent most
      // of them through the task queue, where they waited behind each other.
      workflowTaskSlotSupplier: { type: 'fixed-size', numSlots: cfg.workflowTaskSlots },
      nexusTaskSlotSupplier: { type: 'fixed-size', numSlots: NEXUS_SLOTS },
    },
    // The task queue gives a task to the poll that has waited longest: with
    // the SDK's ten polls open per worker, a burst of sessions all went to the
    // worker that had polled first. With a few, a burst alternates between
    // the workers.
    activityTaskPollerBehavior: { type: 'simple-maximum', maximum: cfg.activityPolls },
    // Each heartbeat is one call to the server (a billable action), not a
    // history event: a session beats this often (SESSION_HEARTBEAT), and no
    // activity calls the server more often than this.
    maxHeartbeatThrottleInterval: SESSION_HEARTBEAT.throttleMs,
    defaultHeartbeatThrottleInterval: SESSION_HEARTBEAT.throttleMs,
    maxCachedWorkflows: cfg.workflowCacheSize,
    // A host's workflow is cached on the worker that ran its last task, often
    // not the one running its session. When that worker dies, the task that
    // the session's end schedules waits on the dead worker's sticky queue for
    // this long before going to the task queue; the liveness watch resets the
    // sticky queue only of the hosts whose sessions ran there. At the SDK's
    // 10 s, hosts crawled again 10-16 s after a kill where the others took 3 s.
    stickyQueueScheduleToStartTimeout: cfg.stickyTimeoutMs,
    // SIGTERM: sessions finish the page in flight and end (rt.draining); the
    // grace time bounds a page that hangs.
    shutdownGraceTime: '30s',
  });
  const metricsServer =
    cfg.metricsPort === null ? null : await startMetricsServer({ port: cfg.metricsPort, host: cfg.metricsHost, metrics, healthy: () => worker.getState() === 'RUNNING' });
  liveness?.start();
  spool.start();
  const done = (async () => {
    try {
      await worker.run();
    } finally {
      // How long each step of a stop took: a rolling restart waits on the slowest worker's.
      const steps: Record<string, number> = {};
      const timed = async (name: string, step: () => Promise<unknown>) => {
        const t0 = Date.now();
        await step();
        steps[name] = Date.now() - t0;
      };
      // Every session ended: the lease goes with the process (a session still recorded keeps it, for a live worker to hand over).
      await timed('liveness', async () => liveness?.stop());
      await timed('metrics', async () => metricsServer?.close().catch(() => undefined));
      await timed('runtime', () => rt.close().catch(() => undefined));
      await timed('spool', () => spool.drain());
      load.stop();
      redis.disconnect();
      await timed('temporal', () => nativeConnection.close().catch(() => undefined));
      log.info('worker stopped', { stepsMs: steps });
    }
  })();
  return {
    worker,
    done,
    metricsUrl: metricsServer ? `http://${cfg.metricsHost}:${metricsServer.port}/metrics` : null,
    shutdown: async () => {
      rt.draining = true;
      // Before anything else: a worker killed while it drains leaves its unsettled sessions to a live one.
      await liveness?.stopping();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
