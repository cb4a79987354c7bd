// A worker in the test process itself, on the test stack's real Temporal
// server and Redis, running the real workflows with the real activities, some
// of them replaced (a stand-in session, an activity made to fail): for tests
// that need the workflows at a scale or in a fault a real crawl cannot reach
// in a test's time.
import { processSetting } from '../../src/config/env';
import { sharedDnsCache } from '../../src/http/dns-cache';
import path from 'node:path';
import type { Redis } from 'ioredis';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, WorkerRuntime } from '../../activities';
import { createRedis } from '../../src/redis/client';
import { connectClient } from '../../src/temporal/connect';

export interface InProcessWorker {
  client: Client;
  redis: Redis;
  /** Workflow executions in the worker's cache now (the SDK's count). */
  cachedWorkflows(): number;
  stop(): Promise<void>;
}

export async function startInProcessWorker(
  taskQueue: string,
  replace: (rt: WorkerRuntime, real: ReturnType<typeof createActivities>) => Partial<ReturnType<typeof createActivities>>,
  options: { maxConcurrentActivityTaskExecutions?: number } = {},
): Promise<InProcessWorker> {
  const client = await connectClient(process.env.TEMPORAL_ADDRESS!);
  const redis = createRedis(process.env.REDIS_URL!) as Redis;
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  // Resolved as a worker process resolves (src/worker/crawler-worker.ts): its hosts file from CRAWLER_HOSTS_FILE.
  const rt = new WorkerRuntime({ redis, temporal: client, dnsCache: sharedDnsCache(processSetting('hostsFile')) });
  const real = createActivities(rt);
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(__dirname, '..', '..', 'workflows', 'index.ts'),
    activities: { ...real, ...replace(rt, real) },
    ...options,
  });
  const running = worker.run();
  return {
    client,
    redis,
    cachedWorkflows: () => worker.getStatus().numCachedWorkflows,
    stop: async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
      await connection.close();
      await client.connection.close();
      redis.disconnect();
    },
  };
}
