// One worker process: runs workflow tasks and activities from the task
// queue. More processes (on any machine) = more capacity; killing one loses
// nothing, Temporal hands its tasks to the others.
import fs from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, makeTelemetryFilterString } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import { processSettings, type ProcessSettings } from '../config/env';
import { createRedis } from '../redis/client';
import { ensureWorkflowBundle, WORKFLOWS_PATH } from './workflow-bundle';

let runtimeInstalled = false;

export interface RunningWorker {
  worker: Worker;
  /** Resolves when the worker has shut down and everything is closed. */
  done: Promise<void>;
  shutdown(): Promise<void>;
}

export async function startCrawlerWorker(overrides: Partial<ProcessSettings> = {}): Promise<RunningWorker> {
  const cfg = processSettings(process.env, overrides);
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    Runtime.install({
      logger: new DefaultLogger((process.env.CRAWLER_LOG_LEVEL as 'WARN' | undefined) ?? 'WARN'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} } },
    });
  }
  const redis = createRedis(cfg.redisUrl);
  const clientConnection = await Connection.connect({ address: cfg.temporalAddress });
  const temporal = new Client({ connection: clientConnection, namespace: cfg.temporalNamespace });
  const nativeConnection = await NativeConnection.connect({ address: cfg.temporalAddress });
  const rt = new WorkerRuntime({ redis, temporal });
  const bundlePath = cfg.workflowBundlePath ?? (await ensureWorkflowBundle().catch(() => null));
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: cfg.temporalNamespace,
    taskQueue: cfg.taskQueue,
    ...(bundlePath ? { workflowBundle: { code: fs.readFileSync(bundlePath, 'utf8') } } : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities(rt),
    maxConcurrentActivityTaskExecutions: cfg.activitySlots,
    maxCachedWorkflows: cfg.workflowCacheSize,
    // SIGTERM lets in-flight steps finish (a fetch is bounded by its total timeout).
    shutdownGraceTime: '30s',
  });
  const done = (async () => {
    try {
      await worker.run();
    } finally {
      await rt.close().catch(() => undefined);
      redis.disconnect();
      await clientConnection.close().catch(() => undefined);
      await nativeConnection.close().catch(() => undefined);
    }
  })();
  return {
    worker,
    done,
    shutdown: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
