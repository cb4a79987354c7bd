// A crawl on servers a test kills and starts again: its own Temporal dev server and Redis
// (test/chaos/restartable-stack.ts, data kept on disk across restarts), a test web, and a pool
// of worker processes pointed at them. The shared harness's servers are never the ones killed.
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { connectClient } from '../../src/temporal/connect';
import { WorkerPool } from '../../src/worker/worker-pool';
import { RestartableStack } from '../chaos/restartable-stack';
import { startTestWeb, type TestWeb } from '../web/test-web';

export interface RestartableCrawl {
  stack: RestartableStack;
  web: TestWeb;
  pool: WorkerPool;
  taskQueue: string;
  /** A client of the stack's server (connect again after a restart). */
  client: Client;
  /** Stops what the crawl started: its workers, its test web and both servers. */
  close(client?: Client): Promise<void>;
}

export async function startRestartableCrawl(name: string, dataDir: string): Promise<RestartableCrawl> {
  const stack = await RestartableStack.start({ dataDir: path.join(dataDir, 'stack') });
  const web = await startTestWeb();
  const taskQueue = `${name}-${process.pid}`;
  const pool = new WorkerPool({
    TEMPORAL_ADDRESS: stack.temporalAddress,
    REDIS_URL: stack.redisUrl,
    CRAWLER_TASK_QUEUE: taskQueue,
    CRAWLER_WORKFLOW_BUNDLE: process.env.CRAWLER_WORKFLOW_BUNDLE ?? '',
  });
  const client = await connectClient(stack.temporalAddress);
  return {
    stack,
    web,
    pool,
    taskQueue,
    client,
    close: async (latest = client) => {
      await pool.stopAll();
      await latest.connection.close().catch(() => undefined);
      await web.close();
      await stack.stop();
    },
  };
}

/** Waits until `check` holds, polling every 200 ms; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
