// A worker's answer to the flushes seals ask of the output locations it
// spools for (src/redis/output-flush.ts): about twice a second it looks
// whether one was asked for each location, and if so finishes its open
// files there, uploads everything, and says so. A seal at a campaign's end
// then finds every page of every live worker in the bucket.
import type { Logger } from '../log/logger';
import { OutputFlushWatch } from '../redis/output-flush';
import type { RedisLike } from '../redis/scripts';
import type { SpoolUploader } from '../storage/spool-uploader';

/** How often a worker looks for flushes asked of its locations. */
const LOOK_EVERY_MS = 500;
/** How long one flush may take before the worker looks again (what is left goes up anyway, by age). */
const FLUSH_WITHIN_MS = 120_000;

export class SpoolFlushResponder {
  private readonly watches = new Map<string, OutputFlushWatch>();
  private timer: NodeJS.Timeout | null = null;
  private looking: Promise<void> | null = null;

  /** `workerId`: the id the worker's lease is held under now (it changes when a worker presumed dead joins again). */
  constructor(
    private readonly redis: RedisLike,
    private readonly spool: SpoolUploader,
    private readonly workerId: () => string,
    private readonly log: Logger,
  ) {}

  /** Records this worker as a spooler of `dir` (before its first file there). */
  register(dir: string): Promise<void> {
    return this.watchOf(dir).register(this.workerId());
  }

  start(): void {
    this.timer = setInterval(() => {
      this.looking ??= this.look().finally(() => (this.looking = null));
    }, LOOK_EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.looking;
  }

  private watchOf(dir: string): OutputFlushWatch {
    let w = this.watches.get(dir);
    if (!w) {
      w = new OutputFlushWatch(this.redis, dir);
      this.watches.set(dir, w);
    }
    return w;
  }

  private async look(): Promise<void> {
    for (const dir of this.spool.spooledDirs()) {
      const watch = this.watchOf(dir);
      try {
        const id = this.workerId();
        // Again each time: the id may have changed since the location's first file.
        await watch.register(id);
        const asked = await watch.pending();
        if (asked === null) continue;
        if (await this.spool.flush(dir, AbortSignal.timeout(FLUSH_WITHIN_MS))) await watch.answer(id, asked);
        else this.log.warn('spool: a flush asked for did not finish; the seal goes on without this worker', { location: dir });
      } catch (err) {
        this.log.warn('spool: cannot answer a flush (Redis?)', { location: dir, error: err instanceof Error ? err.message : String(err) });
      }
    }
  }
}
