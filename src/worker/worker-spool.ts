// A worker's spool for outputs in object storage (docs/architecture.md,
// "Archives in object storage"): its uploader, swept before the first task,
// and its answer to the flushes seals ask for; on drain, the last files go up
// for a bounded time.
import type { Logger } from '../log/logger';
import type { RedisLike } from '../redis/scripts';
import { objectStoreFor } from '../storage/output-location';
import { SpoolUploader, type ObjectStoreFactory } from '../storage/spool-uploader';
import { SpoolFlushResponder } from './spool-flush-responder';

/**
 * How long a draining worker waits for its spooled files to reach their
 * stores. Past it the worker exits anyway: the files stay in the spool and
 * go up after its next start (a store that is down must not hold a worker
 * that was told to stop).
 */
const DRAIN_UPLOAD_MS = 60_000;

/** Which outputs are in object storage: the store of an `output.dir` reached with its campaign's output.s3, or null for a folder. */
export const openOutputStore: ObjectStoreFactory = (target) => objectStoreFor(target.dir, target.s3);

export interface WorkerSpool {
  uploader: SpoolUploader;
  /** Starts answering flushes (once the worker runs). */
  start(): void;
  /** The worker drains: no more flushes answered, the last files uploaded (bounded), the uploader closed. */
  drain(): Promise<void>;
}

/**
 * The spool under `root`, swept first: what a worker that died here left goes up before this one's
 * first task. `spoolerId`: the id this worker answers flushes under (its lease's, src/redis/output-flush.ts).
 */
export async function openWorkerSpool(opts: { root: string; redis: RedisLike; log: Logger; spoolerId: () => string }): Promise<WorkerSpool> {
  let flushes: SpoolFlushResponder | null = null;
  const uploader = new SpoolUploader({ root: opts.root, openStore: openOutputStore, log: opts.log, onLocation: (dir) => flushes!.register(dir) });
  flushes = new SpoolFlushResponder(opts.redis, uploader, opts.spoolerId, opts.log);
  await uploader.start();
  const responder = flushes;
  return {
    uploader,
    start: () => responder.start(),
    drain: async () => {
      await responder.stop();
      // The writers are closed, their last files finished: up they go, for a bounded time.
      if (!(await uploader.flushAll(AbortSignal.timeout(DRAIN_UPLOAD_MS)).catch(() => false)))
        opts.log.warn('worker: spooled files not yet uploaded stay in the spool for the next start', { spool: uploader.root });
      await uploader.close();
    },
  };
}
