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
import Redis, { Cluster } from 'ioredis';
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

/** What `p` resolves to, or null when it fails or takes longer than `timeoutMs`. */
async function within<T>(p: Promise<T>, timeoutMs: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), timeoutMs);
  });
  try {
    return await Promise.race([p.catch(() => null), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A node's CLUSTER INFO says every slot is served: none failing, none suspected of it. */
export function clusterHealthy(info: string): boolean {
  const field = (name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1];
  return field('cluster_state') === 'ok' && field('cluster_slots_fail') === '0' && field('cluster_slots_pfail') === '0';
}

/** A probe of a cluster's health shared by the sessions of one process that ride out the same outage. */
const shared = new WeakMap<Cluster, { at: number; healthy: Promise<boolean> }>();

/**
 * Whether every slot of the cluster is served: the masters a node's CLUSTER SLOTS names each answer
 * a PING, and every node that answers says no slot is failing or suspected. A node's own view is
 * not enough: for the node timeout after a master dies every node still says all slots are served,
 * and the client drops a dead node from its pool, so its own list of masters may miss the dead one.
 */
function clusterServes(redis: Cluster, timeoutMs: number): Promise<boolean> {
  const last = shared.get(redis);
  if (last && Date.now() - last.at < REDIS_OUTAGE.probeEveryMs) return last.healthy;
  const healthy = (async () => {
    const nodes = redis.nodes('all');
    const views = (await Promise.all(nodes.map((n) => within(n.call('CLUSTER', 'INFO'), timeoutMs)))).filter((v) => v !== null);
    if (views.length === 0 || !views.every((v) => clusterHealthy(String(v)))) return false;
    const slots = (await Promise.all(nodes.map((n) => within(n.call('CLUSTER', 'SLOTS') as Promise<[number, number, [string, number]][]>, timeoutMs)))).find((v) => v !== null);
    if (!slots) return false;
    const masters = [...new Set(slots.map(([, , [host, port]]) => `${host}:${port}`))];
    const pings = await Promise.all(masters.map((m) => within(pingOnce(redis, m, timeoutMs), timeoutMs)));
    return pings.every((p) => p === 'PONG');
  })();
  shared.set(redis, { at: Date.now(), healthy });
  return healthy;
}

/** One PING to `hostPort` on a connection of its own, with the cluster's credentials and TLS, not retried. */
async function pingOnce(cluster: Cluster, hostPort: string, timeoutMs: number): Promise<string> {
  const cut = hostPort.lastIndexOf(':');
  const node = new Redis({
    ...cluster.options.redisOptions,
    host: hostPort.slice(0, cut),
    port: Number(hostPort.slice(cut + 1)),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  node.on('error', () => undefined);
  try {
    await node.connect();
    return await node.ping();
  } finally {
    node.disconnect();
  }
}

/**
 * Whether Redis serves again: every key's node answers a read and, on a cluster, every slot is
 * served. The keys alone are not enough: a session also writes to other hosts' keys (the links a
 * page routes) and to shared ones (addresses), which may sit on the master that failed, and a
 * retry that failed there again spent the session's attempts at once.
 */
async function answers(redis: RedisLike, keys: string[], timeoutMs: number): Promise<boolean> {
  const reads = within(Promise.all(keys.map((k) => redis.exists(k))), timeoutMs);
  if (!(redis instanceof Cluster)) return (await reads) !== null;
  const [read, serves] = await Promise.all([reads, clusterServes(redis, timeoutMs)]);
  return read !== null && serves;
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
 * unreachable and answers again within REDIS_OUTAGE.rideOutMs; then, after `onBack` (the session
 * notes its URL in flight as a retry: an outage is not the URL's failure), a retryable failure whose next
 * attempt starts at once (Temporal's own back-off would add seconds to every host the outage hit).
 * An outage longer than that is left to the retry policy and the host's durable back-off.
 */
export async function afterRedisFailure(redis: RedisLike, keys: string[], err: unknown, opts: { signal?: AbortSignal; onBack?: () => Promise<void> } = {}): Promise<unknown> {
  if (!isRedisUnavailable(err) || !(await waitForRedis(redis, keys, { signal: opts.signal }))) return err;
  // Best effort: what is not written now is counted against the URL as before.
  await opts.onBack?.().catch(() => undefined);
  const message = err instanceof Error ? err.message : String(err);
  return ApplicationFailure.create({
    message: `Redis was unreachable (${message.slice(0, 200)}) and answers again: the session starts over at once`,
    type: FailureType.redisOutage,
    nextRetryDelay: REDIS_OUTAGE.retryAfterMs,
    cause: err instanceof Error ? err : undefined,
  });
}
