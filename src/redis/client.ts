import Redis, { Cluster } from 'ioredis';
import { defineScripts, type RedisLike } from './scripts';

/**
 * One client per process. `redis://host:port` is a single server;
 * `redis+cluster://host:port,host:port` seeds a Redis Cluster client.
 * Commands queue while Redis is down and are retried when it returns, so a
 * Redis restart stalls the crawl instead of failing it.
 */
export function createRedis(url: string): RedisLike {
  let client: RedisLike;
  if (url.startsWith('redis+cluster://')) {
    const nodes = url
      .slice('redis+cluster://'.length)
      .split(',')
      .map((hp) => {
        const [host, port] = hp.split(':');
        return { host, port: Number(port || 6379) };
      });
    // No auto-pipelining on a cluster: ioredis groups auto-pipelined
    // commands by the slot of their first key, and for a script whose key
    // count is an argument (the content index's) that "first key" is the
    // count itself. Commands of different slots then share a pipeline and
    // fail with "All keys in the pipeline should belong to the same slots
    // allocation group" (redis/ioredis#2109); a page step failing there after
    // its fetch is retried and fetches the page again.
    client = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 10 }, clusterRetryStrategy: (n) => Math.min(n * 200, 2000) });
  } else {
    // Auto-pipelining: the many concurrent page steps of a worker issue their
    // commands in one socket write per tick instead of one write each.
    client = new Redis(url, { enableAutoPipelining: true, maxRetriesPerRequest: 10, retryStrategy: (n) => Math.min(n * 200, 2000) });
  }
  client.on('error', () => {
    // Reconnection is automatic; callers see failures as rejected commands.
  });
  defineScripts(client);
  return client;
}
