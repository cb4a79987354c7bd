// A seal's flush of an output location in object storage (src/redis/output-flush.ts,
// src/worker/spool-flush-responder.ts, activities/output-flush.ts), against the
// real Redis of the test stack: every live worker that spooled files for the
// location uploads what it holds before the seal goes on; a worker whose lease
// ran out is not waited for; one that does not answer holds the seal until its
// deadline, which says whom it waited for.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { createLogger } from '../../src/log/logger';
import { createRedis } from '../../src/redis/client';
import { flushOutput, OutputFlushWatch } from '../../src/redis/output-flush';
import { WorkerRegistry } from '../../src/redis/worker-registry';
import { FolderObjectStore } from '../../src/storage/folder-object-store';
import type { IndexEntry } from '../../src/storage/index-writer';
import { IDLE_CLOSE_MS, OutputRegistry } from '../../src/storage/output-registry';
import { SpoolUploader } from '../../src/storage/spool-uploader';
import { SpoolFlushResponder } from '../../src/worker/spool-flush-responder';
import { tempDirs } from '../support/temp-dirs';

const tmpDir = tempDirs('output-flush-');
const redis = createRedis(process.env.REDIS_URL!);
afterAll(() => redis.disconnect());

/** A worker's spool for `dir` (files kept for an hour: only a flush sends them), answering flushes as `id`. */
async function spoolingWorker(dir: string, storeDir: string, id: string) {
  const log = createLogger({ level: 'error' });
  let responder: SpoolFlushResponder | null = null;
  const uploader = new SpoolUploader({
    root: path.join(tmpDir(), 'spool'),
    openStore: (t) => (t.dir === dir ? new FolderObjectStore(storeDir) : null),
    sweepEveryMs: 0,
    onLocation: (d) => responder!.register(d),
  });
  responder = new SpoolFlushResponder(redis, uploader, () => id, log);
  await uploader.start();
  responder.start();
  const outputs = new OutputRegistry(IDLE_CLOSE_MS, uploader);
  const upload = { maxFileBytes: 1 << 30, maxFileAgeMs: 3_600_000 };
  return {
    write: async (url: string) => (await outputs.index(dir, { upload })).append({ url, fetchedAt: new Date().toISOString() } as IndexEntry),
    stop: async () => {
      await responder.stop();
      await outputs.closeAll();
      await uploader.close();
    },
  };
}

async function lines(store: FolderObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list('index/')) {
    const chunks: Buffer[] = [];
    for await (const c of await store.read(o.key)) chunks.push(c as Buffer);
    out.push(
      ...Buffer.concat(chunks)
        .toString('utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { url: string }).url),
    );
  }
  return out.sort();
}

test('a flush waits for every live spooler to upload what it holds, and not for one whose lease ran out', async () => {
  const dir = `s3://flush-test/${randomBytes(4).toString('hex')}`;
  const storeDir = path.join(tmpDir(), 'store');
  const group = randomBytes(3).toString('hex');
  const registry = new WorkerRegistry(redis, group);
  await registry.join(`a-${group}`, 60_000);
  await registry.join(`b-${group}`, 60_000);
  const a = await spoolingWorker(dir, storeDir, `a-${group}`);
  const b = await spoolingWorker(dir, storeDir, `b-${group}`);
  try {
    await a.write('http://site.test/a1');
    await a.write('http://site.test/a2');
    await b.write('http://site.test/b1');
    // A third spooler that died (its lease is gone): recorded, never answers.
    await new OutputFlushWatch(redis, dir).register(`c-${group}`);
    // Nothing reached the store yet: files finish by size or age (an hour here), or by a flush.
    expect(await lines(new FolderObjectStore(storeDir))).toEqual([]);

    const outcome = await flushOutput(redis, dir, { deadline: Date.now() + 60_000, isLive: (ids) => registry.live(ids) });
    expect(outcome).toEqual({ complete: true, waitingOn: [], gone: [`c-${group}`] });
    expect(await lines(new FolderObjectStore(storeDir))).toEqual(['http://site.test/a1', 'http://site.test/a2', 'http://site.test/b1']);

    // A live spooler that does not answer (its worker stopped looking) holds the next flush until its deadline.
    await b.stop();
    const late = await flushOutput(redis, dir, { deadline: Date.now() + 1_500, isLive: (ids) => registry.live(ids) });
    expect(late.complete).toBe(false);
    expect(late.waitingOn).toEqual([`b-${group}`]);
  } finally {
    await a.stop();
    await b.stop();
  }
});
