// The flush a seal asks of every worker that spools files for an output
// location in object storage: a worker uploads files as they finish (by size
// or age), so at a campaign's end the last ones may still sit in the spools
// of several workers, on several machines. The seal asks (a time in Redis);
// each worker that spools for the location sees it within about a second,
// finishes its open files, uploads everything, and says so; the seal goes on
// once every live spooler has, or at its deadline. A spooler whose lease ran
// out (src/redis/worker-registry.ts) is not waited for: what it had not
// uploaded is gone with it, or comes later from its spool when it restarts.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { outputKeys } from './keys';
import type { RedisLike } from './scripts';

/** How long the keys of a location outlive its last flush or spooler. */
const KEY_TTL_S = 7 * 24 * 3600;

/** Spooler ids of workers without liveness (CRAWLER_WORKER_LEASE_MS=0) start with this: never presumed dead, waited for until the deadline. */
export const NO_LIVENESS_SPOOLER = 'no-lease:';

/** The short name of an output location in keys. */
export const outputIdOf = (location: string): string => createHash('sha256').update(location).digest('hex').slice(0, 16);

async function redisNow(redis: RedisLike): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The worker side: records itself as a spooler of the location, and answers its flushes. */
export class OutputFlushWatch {
  private readonly k: ReturnType<typeof outputKeys>;
  private registeredAs: string | null = null;
  private answered = 0;

  constructor(
    private readonly redis: RedisLike,
    location: string,
  ) {
    this.k = outputKeys(outputIdOf(location));
  }

  /** Records `workerId` as a spooler (again when the id changed: a worker presumed dead joins under a new one). */
  async register(workerId: string): Promise<void> {
    if (this.registeredAs === workerId) return;
    await this.redis.multi().sadd(this.k.spoolers, workerId).expire(this.k.spoolers, KEY_TTL_S).exec();
    this.registeredAs = workerId;
  }

  /** The time of a flush asked for since the last one this worker answered, or null. */
  async pending(): Promise<number | null> {
    const asked = Number((await this.redis.get(this.k.flush)) ?? 0);
    return asked > this.answered ? asked : null;
  }

  /** Every file of the location was uploaded after the flush asked for at `asked`. */
  async answer(workerId: string, asked: number): Promise<void> {
    await this.register(workerId);
    await this.redis.multi().hset(this.k.flushed, workerId, String(asked)).expire(this.k.flushed, KEY_TTL_S).exec();
    this.answered = Math.max(this.answered, asked);
  }
}

export interface FlushOutcome {
  /** Every live spooler uploaded what it held. */
  complete: boolean;
  /** Spoolers that had not answered at the deadline. */
  waitingOn: string[];
  /** Spoolers not waited for: their lease had run out. */
  gone: string[];
}

/**
 * The seal's side: asks every spooler of the location to upload what it holds and waits until each
 * live one has (or `deadline`, epoch ms of this machine). `isLive` says whether a worker id still
 * holds its lease; without liveness every spooler counts as live (and one that died is waited for
 * until the deadline).
 */
export async function flushOutput(
  redis: RedisLike,
  location: string,
  opts: { deadline: number; isLive: (workerIds: string[]) => Promise<boolean[]>; pollMs?: number },
): Promise<FlushOutcome> {
  const k = outputKeys(outputIdOf(location));
  const asked = await redisNow(redis);
  await redis.multi().set(k.flush, String(asked), 'EX', KEY_TTL_S).exec();
  for (;;) {
    const [spoolers, flushed] = await Promise.all([redis.smembers(k.spoolers), redis.hgetall(k.flushed)]);
    const unanswered = spoolers.filter((id) => Number(flushed[id] ?? 0) < asked);
    const live = unanswered.length ? await opts.isLive(unanswered) : [];
    const waitingOn = unanswered.filter((_, i) => live[i]);
    const gone = unanswered.filter((_, i) => !live[i]);
    if (waitingOn.length === 0) return { complete: true, waitingOn, gone };
    if (Date.now() >= opts.deadline) return { complete: false, waitingOn, gone };
    await sleep(opts.pollMs ?? 250);
  }
}
