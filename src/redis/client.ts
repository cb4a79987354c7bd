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
    client = new Cluster(nodes, { redisOptions: { maxRetriesPerRequest: 10 }, clusterRetryStrategy: (n) => Math.min(n * 200, 2000) });
  } else {
    client = new Redis(url, { maxRetriesPerRequest: 10, retryStrategy: (n) => Math.min(n * 200, 2000) });
  }
  client.on('error', () => {
    // Reconnection is automatic; callers see failures as rejected commands.
  });
  defineScripts(client);
  return client;
}
