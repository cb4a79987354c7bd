// How much a campaign holds in Redis: its keys (found with SCAN by the
// prefixes of src/redis/keys.ts) and the entries in them (members of sets and
// sorted sets, fields of hashes, items of lists; a plain value counts one).
// For tests that bound a campaign's Redis use by its budgets, whatever its
// pages say.
import type Redis from 'ioredis';

export interface RedisFootprint {
  keys: number;
  entries: number;
  /** Entries by key kind: what follows the hash tag (`seen`, `frontier`, `content:verdict`…). */
  byKind: Record<string, number>;
}

/** Redis glob metacharacters in a literal part of a pattern. */
const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, '\\$&');

/** Every key of the campaign: per campaign `crawl:{key}:…` and per host `crawl:{key|host}:…`. */
export async function campaignRedisKeys(redis: Redis, campaignKey: string): Promise<string[]> {
  const keys = new Set<string>();
  for (const match of [`crawl:{${globEscape(campaignKey)}}:*`, `crawl:{${globEscape(campaignKey)}|*`]) {
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      for (const k of batch) keys.add(k);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...keys];
}

export async function campaignFootprint(redis: Redis, campaignKey: string): Promise<RedisFootprint> {
  const keys = await campaignRedisKeys(redis, campaignKey);
  const types = ((await redis.pipeline(keys.map((k) => ['type', k])).exec()) ?? []).map(([, t]) => String(t));
  const sizeCommand: Record<string, string> = { set: 'scard', zset: 'zcard', hash: 'hlen', list: 'llen', stream: 'xlen' };
  const sizes = (await redis.pipeline(keys.map((k, i) => (sizeCommand[types[i]] ? [sizeCommand[types[i]], k] : ['exists', k]))).exec()) ?? [];
  const out: RedisFootprint = { keys: 0, entries: 0, byKind: {} };
  keys.forEach((k, i) => {
    const n = Number(sizes[i]?.[1] ?? 0);
    // A key that expired or was deleted between SCAN and now holds nothing.
    if (types[i] === 'none' || n === 0) return;
    const kind = k.slice(k.indexOf('}:') + 2);
    out.keys++;
    out.entries += n;
    out.byKind[kind] = (out.byKind[kind] ?? 0) + n;
  });
  return out;
}

/**
 * Samples a campaign's footprint every `everyMs` until stopped, and keeps the
 * largest: a flood that a budget later drains (frontier entries recorded
 * without a request) must still be seen.
 */
export function watchFootprint(redis: Redis, campaignKey: string, everyMs: number): { stop(): Promise<{ peak: RedisFootprint; last: RedisFootprint }> } {
  let peak: RedisFootprint = { keys: 0, entries: 0, byKind: {} };
  let last = peak;
  let stopped = false;
  const sample = async () => {
    last = await campaignFootprint(redis, campaignKey);
    if (last.entries > peak.entries) peak = last;
  };
  const loop = (async () => {
    while (!stopped) {
      await sample();
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      await sample();
      return { peak, last };
    },
  };
}
