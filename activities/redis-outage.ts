// A session that fails because Redis is unreachable for a while (a master
// killed and its replica promoted, a restart): it rides the outage out with
// short fixed probes of the keys it needs, then its attempt ends with a retry
// asked for at once. Temporal's retry policy alone would back off 1, 2, 4, 8 s
// and after five attempts hand the host to its durable back-off (30 s and
// more), so a host whose keys sat on a failed master resumed up to half a
// minute after the failover had completed (docs/guarantees.md). The probes are
// reads, the retry is an ordinary attempt: it takes the host over with a
// higher fencing number and resumes the claimed URL.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import { REDIS_OUTAGE } from '../src/config/retry-policy';
import { campaignKeys, hostKeys, sharedHostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { FailureType } from '../workflows/messages';

/** Replies of a Redis that is failing over, loading its data or refusing writes while it is a replica: each passes. */
const PASSING_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING|READONLY|NOREPLICAS)\b/;

/**
 * Whether `err` (or an error it wraps) says Redis could not be reached or is failing over, rather
 * than that a command was wrong: the errors ioredis gives when its retries of a dead connection
 * run out, when a cluster's slots point at a node that is gone, or the cluster refuses commands
 * while it elects a new master.
 */
export function isRedisUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ClusterAllFailedError') return true;
    if (e.message === 'Connection is closed.' || e.message.startsWith('Too many Cluster redirections')) return true;
    if (e.name === 'ReplyError' && PASSING_REPLIES.test(e.message)) return true;
  }
  return false;
}

/** The keys whose slots a host's session cannot do without: the campaign's, the host's frontier, the host's clock. */
export function sessionProbeKeys(campaignKey: string, host: string, clockKey = sharedHostKeys(host).clock): string[] {
  return [campaignKeys(campaignKey).config, hostKeys(campaignKey, host).frontier, clockKey];
}

/** Whether every key's node answers a read within `timeoutMs`. */
async function answers(redis: RedisLike, keys: string[], timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    const reads = Promise.all(keys.map((k) => redis.exists(k))).then(
      () => true,
      () => false,
    );
    return await Promise.race([reads, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Probes `keys` every REDIS_OUTAGE.probeEveryMs until all answer (true) or `maxMs` has passed or
 * `signal` aborts (false).
 */
export async function waitForRedis(redis: RedisLike, keys: string[], opts: { maxMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
  const until = Date.now() + (opts.maxMs ?? REDIS_OUTAGE.rideOutMs);
  for (;;) {
    if (opts.signal?.aborted) return false;
    if (await answers(redis, keys, REDIS_OUTAGE.probeTimeoutMs)) return true;
    const left = until - Date.now();
    if (left <= 0) return false;
    await sleep(Math.min(REDIS_OUTAGE.probeEveryMs, left), undefined, { signal: opts.signal }).catch(() => undefined);
  }
}

/**
 * What a session's attempt that failed with `err` throws: `err` itself, unless Redis was
 * unreachable and answers again within REDIS_OUTAGE.rideOutMs; then a retryable failure whose next
 * attempt starts at once (Temporal's own back-off would add seconds to every host the outage hit).
 * An outage longer than that is left to the retry policy and the host's durable back-off.
 */
export async function afterRedisFailure(redis: RedisLike, keys: string[], err: unknown, signal?: AbortSignal): Promise<unknown> {
  if (!isRedisUnavailable(err) || !(await waitForRedis(redis, keys, { signal }))) return err;
  const message = err instanceof Error ? err.message : String(err);
  return ApplicationFailure.create({
    message: `Redis was unreachable (${message.slice(0, 200)}) and answers again: the session starts over at once`,
    type: FailureType.redisOutage,
    nextRetryDelay: REDIS_OUTAGE.retryAfterMs,
    cause: err instanceof Error ? err : undefined,
  });
}
