import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { defineScripts, type RedisLike } from './scripts';
import { parseRedisUrl, type RedisTarget } from '../config/env';

const retryStrategy = (n: number) => Math.min(n * 200, 2000);

/** What createRedis hands ioredis for a URL: the Redis options, or the Cluster's seed nodes and options. */
export function redisClientOptions(target: RedisTarget):
  | { kind: 'single'; options: RedisOptions }
  | { kind: 'cluster'; nodes: { host: string; port: number }[]; options: ClusterOptions } {
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
        // Auto-pipelining: the many concurrent page steps of a worker issue their
        // commands in one socket write per tick instead of one write each.
        enableAutoPipelining: true,
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
  defineScripts(client);
  return client;
}
