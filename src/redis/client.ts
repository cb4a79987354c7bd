import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { defineScripts, type RedisLike } from './scripts';
import { parseRedisUrl, redactRedisUrl, type RedisTarget } from '../config/env';
import { CrawlerError } from '../errors';
import { coalesceClientWrites } from './write-coalescing';

const retryStrategy = (n: number) => Math.min(n * 200, 2000);

/** What createRedis hands ioredis for a URL: the Redis options, or the Cluster's seed nodes and options. */
export function redisClientOptions(
  target: RedisTarget,
): { kind: 'single'; options: RedisOptions } | { kind: 'cluster'; nodes: { host: string; port: number }[]; options: ClusterOptions } {
  const auth = { ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}) };
  if (target.kind === 'single') {
    return {
      kind: 'single',
      options: {
        host: target.node.host,
        port: target.node.port,
        db: target.db,
        ...auth,
        // Node checks the certificate against `host` (and sends it as SNI).
        ...(target.tls ? { tls: {} } : {}),
        // No auto-pipelining: with hundreds of sessions issuing scripts at once
        // it crashed workers (ioredis' auto-pipeline callback read a missing
        // result: "results[i] is not iterable", uncaught). Commands sent
        // together still share the socket; only the per-tick batching goes.
        enableAutoPipelining: false,
        maxRetriesPerRequest: 10,
        retryStrategy,
      },
    };
  }
  // No auto-pipelining on a cluster: ioredis groups auto-pipelined
  // commands by the slot of their first key, and for a script whose key
  // count is an argument (the content index's) that "first key" is the
  // count itself. Commands of different slots then share a pipeline and
  // fail with "All keys in the pipeline should belong to the same slots
  // allocation group" (redis/ioredis#2109); a page step failing there after
  // its fetch is retried and fetches the page again.
  return {
    kind: 'cluster',
    nodes: target.nodes,
    options: {
      // Every node connection (seeds and the ones CLUSTER SLOTS names) authenticates the same way.
      redisOptions: { maxRetriesPerRequest: 10, ...auth, ...(target.tls ? { tls: {} } : {}) },
      clusterRetryStrategy: retryStrategy,
      // With TLS, keep seed host names as given instead of resolving them to
      // addresses first, so certificates issued for names still verify
      // (nodes the cluster announces by address need certificates that cover it).
      ...(target.tls ? { dnsLookup: (address: string, callback: (err: Error | null, address: string) => void) => callback(null, address) } : {}),
    },
  };
}

/**
 * One client per process. `redis://` / `rediss://` (TLS) is a single server,
 * `redis+cluster://` / `rediss+cluster://` seeds a Redis Cluster client; both
 * take `user:password@` (parseRedisUrl in src/config/env.ts). Commands queue while Redis is
 * down and are retried when it returns, so a Redis restart stalls the crawl
 * instead of failing it. A malformed URL throws RedisUrlError.
 */
export function createRedis(url: string): RedisLike {
  const o = redisClientOptions(parseRedisUrl(url));
  const client: RedisLike = o.kind === 'single' ? new Redis(o.options) : new Cluster(o.nodes, o.options);
  client.on('error', () => {
    // Reconnection is automatic; callers see failures as rejected commands.
  });
  coalesceClientWrites(client);
  defineScripts(client);
  return client;
}

/** Redis did not answer a PING: down, wrong address, wrong password. */
export class RedisUnavailableError extends CrawlerError<'REDIS_UNAVAILABLE'> {
  constructor(
    /** The URL with any password redacted. */
    readonly url: string,
    cause: unknown,
  ) {
    super('REDIS_UNAVAILABLE', `cannot reach Redis at ${url}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'RedisUnavailableError';
  }
}

/**
 * One PING with a deadline, through the same client settings the workers
 * use (cluster, TLS, credentials). A command that is about to start work
 * checks first: workers would otherwise retry a dead Redis in silence.
 */
export async function checkRedis(url: string, timeoutMs = 5_000): Promise<void> {
  const client = createRedis(url);
  let lastError: Error | null = null;
  client.on('error', (err: Error) => {
    lastError = err;
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.ping(),
      new Promise((_resolve, reject) => {
        timer = setTimeout(() => reject(lastError ?? new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (err) {
    throw new RedisUnavailableError(redactRedisUrl(url), lastError ?? err);
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}
