// A real S3-compatible server for one test file: SeaweedFS (src/stack/seaweedfs.ts)
// on a free loopback port, with its own data folder, identity and bucket. Its
// first use on a machine builds `weed` (minutes), so the tests that need it
// run in `npm run test:acceptance`, not `npm test`.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { startObjectStoreServer, type RunningObjectStore } from '../../src/stack/seaweedfs';
import type { ObjectStore } from '../../src/storage/object-store';

export interface TestObjectStore extends RunningObjectStore {
  bucket: string;
  accessKey: string;
  secretKey: string;
  /** The environment a worker or CLI reads the store's credentials from (the AWS SDK's variables). */
  env: Record<string, string>;
}

export async function startTestObjectStore(name = 'crawl'): Promise<TestObjectStore> {
  const base = process.env.CRAWLER_TEST_DATA_DIR ?? os.tmpdir();
  const dataDir = path.join(base, `object-store-${process.pid}-${randomBytes(3).toString('hex')}`);
  const accessKey = `AKTEST${randomBytes(6).toString('hex').toUpperCase()}`;
  const secretKey = randomBytes(20).toString('base64url');
  const running = await startObjectStoreServer({ dataDir, accessKey, secretKey, buckets: [name], log: (m) => process.stderr.write(`[object store] ${m}\n`) });
  return {
    ...running,
    bucket: name,
    accessKey,
    secretKey,
    env: { AWS_ACCESS_KEY_ID: accessKey, AWS_SECRET_ACCESS_KEY: secretKey, AWS_REGION: 'us-east-1' },
  };
}

/** The keys of every object under `prefix`, in key order. */
export async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.list(prefix)) keys.push(o.key);
  return keys;
}
