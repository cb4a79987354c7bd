// Integration tests share one real Temporal dev server and one real Redis,
// started here on free loopback ports with data in a throwaway folder under
// .crawler/, so they never collide with a stack the user already runs.
import fs from 'node:fs';
import path from 'node:path';
import { LOCAL_DIR } from '../../src/stack/paths';
import { ensureWeedBinary } from '../../src/stack/seaweedfs';
import { startStack, type RunningStack } from '../../src/stack/stack';
import { ensureWorkerBundle } from '../../src/worker/worker-bundle';
import { ensureWorkflowBundle } from '../../src/worker/workflow-bundle';

declare global {
  var __CRAWLER_TEST_STACK__: RunningStack | undefined;
}

export default async function globalSetup(): Promise<void> {
  const dataDir = path.join(LOCAL_DIR, 'test-runs', `${Date.now()}-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true });
  const log = (m: string) => process.stderr.write(`[test stack] ${m}\n`);
  // The worker bundle is built here once, not by the first test files at the same time
  // (each test process then finds it cached).
  // `npm run test:acceptance`: the S3 tests' object store (SeaweedFS) is built here, beside the rest. Built
  // cold from the Go module proxy it took over ten minutes once, past the 600 s of the hooks that start it.
  const objectStore = process.env.CRAWLER_TEST_BUILD_OBJECT_STORE ? ensureWeedBinary((m) => log(`[object store] ${m}`)) : Promise.resolve(null);
  const [started, built, workerBuilt, storeBuilt] = await Promise.allSettled([
    startStack({ dataDir, headless: false, log }),
    ensureWorkflowBundle(),
    ensureWorkerBundle(),
    objectStore,
  ]);
  // A bundle that fails to build must not leave the servers running: Jest runs no teardown after a failed setup.
  const failed = [started, built, workerBuilt, storeBuilt].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed || started.status === 'rejected' || built.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop();
    throw failed?.reason;
  }
  const [stack, bundle] = [started.value, built.value];
  globalThis.__CRAWLER_TEST_STACK__ = stack;
  process.env.TEMPORAL_ADDRESS = stack.temporalAddress;
  process.env.REDIS_URL = stack.redisUrl;
  process.env.CRAWLER_TEST_UI_URL = stack.uiUrl ?? '';
  process.env.CRAWLER_WORKFLOW_BUNDLE = bundle;
  process.env.CRAWLER_TEST_DATA_DIR = dataDir;
  log(`temporal ${stack.temporalAddress}, redis ${stack.redisUrl}, ui ${stack.uiUrl}`);
}
