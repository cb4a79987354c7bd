// What a campaign leaves in Redis, and how it goes: a retention when the
// campaign ends (`retention.keep`: under summary its working state is deleted
// then and the rest gets a PEXPIRE, src/redis/retained-keys.ts; under all
// every key gets the PEXPIRE), and a purge (delete them now). Keys live under two kinds of hash tags (src/redis/keys.ts):
//   {campaignKey}       the campaign's own keys: one slot, names known in advance
//   {campaignKey|host}  each host's frontier state: one slot per host
// The hosts are found in the campaign's own structures, which together name
// every host that ever got a per-host key: a URL enters a host's frontier
// only through an enqueue that then marks the host ready (or finds it
// active), a dispatched host gets a record, a host given up is listed, and
// a host only a rendered page's requests reached is listed in pageHosts.
// Cookie jars ({campaignKey|registrable domain}, cookie-store.ts) are
// named by a host's registrable domain, not always a host of the campaign:
// each host's jar is expired beside its keys.
// Host clocks and the robots.txt cache ({host}) are shared by all campaigns
// and expire on their own (the clock a minute after its last request, robots
// after 24 h): neither is touched here.
import type { Cluster, Redis } from 'ioredis';
import { compactKeyNames } from '../dedup/compact-store';
import { campaignKeys, contentKeys, cookieJarKey, hostKeys, MAX_CONTENT_BANDS } from './keys';
import { CONTENT_KEYS_KEPT, HOST_KEYS_KEPT, KEPT_FIELD, campaignKeysAtEnd, hostKeysAtEnd } from './retained-keys';
import type { RedisLike } from './scripts';

/** Every key name the campaign itself may have (content-index bands for every distance a campaign may set). */
export function campaignKeyNames(campaignKey: string): string[] {
  const names: string[] = Object.values(campaignKeys(campaignKey));
  for (let d = 0; d < MAX_CONTENT_BANDS; d++) {
    const c = contentKeys(campaignKey, d);
    if (d === 0) names.push(c.verdict, c.exact, c.payloads, c.meta);
    for (let i = 0; i <= d; i++) names.push(c.band(i));
  }
  return names;
}

export const hostKeyNames = (campaignKey: string, host: string): string[] => Object.values(hostKeys(campaignKey, host));

/** Every host of the campaign, a page at a time (duplicates across pages are possible and harmless). */
export async function* campaignHostPages(redis: RedisLike, campaignKey: string): AsyncGenerator<string[]> {
  const k = campaignKeys(campaignKey);
  const scans: [string, 'hscan' | 'zscan' | 'sscan'][] = [
    [k.hosts, 'hscan'],
    [k.active, 'hscan'],
    [k.ready, 'zscan'],
    [k.givenUp, 'sscan'],
    [k.pageHosts, 'sscan'],
  ];
  for (const [key, cmd] of scans) {
    const pairs = cmd !== 'sscan';
    let cursor = '0';
    do {
      const [next, flat] = await redis[cmd](key, cursor, 'COUNT', 500);
      cursor = next;
      const page = pairs ? flat.filter((_, i) => i % 2 === 0) : flat;
      if (page.length) yield page;
    } while (cursor !== '0');
  }
}

/** Host scripts in flight at once: each is one round trip to the host's slot. */
const CONCURRENCY = 64;

/**
 * Calls `onHost` for every host of the campaign and `onJar` for each cookie jar of theirs
 * (each call one slot), CONCURRENCY at a time, a page of hosts at a time.
 */
async function eachHostAndJar(
  redis: RedisLike,
  campaignKey: string,
  onHost: (host: string) => Promise<unknown>,
  onJar: (jar: string) => Promise<unknown>,
  onPage?: () => void,
): Promise<number> {
  let n = 0;
  for await (const page of campaignHostPages(redis, campaignKey)) {
    for (let i = 0; i < page.length; i += CONCURRENCY) {
      const hosts = page.slice(i, i + CONCURRENCY);
      // Hosts of one domain share a jar: each jar once per batch, in a call of its own (another slot).
      const jars = new Set(hosts.map((host) => cookieJarKey(campaignKey, host)));
      await Promise.all([...hosts.map(onHost), ...[...jars].map(onJar)]);
    }
    n += page.length;
    onPage?.();
  }
  return n;
}

const eachHost = (redis: RedisLike, campaignKey: string, fn: (keys: string[]) => Promise<unknown>, onPage?: () => void): Promise<number> =>
  eachHostAndJar(
    redis,
    campaignKey,
    (host) => fn(hostKeyNames(campaignKey, host)),
    (jar) => fn([jar]),
    onPage,
  );

/**
 * Gives every key of the campaign a time to live of `ttlMs` (keys that do not
 * exist are skipped). Idempotent: a retried call sets the same retention
 * again. Per-host keys first, the campaign's own (which list the hosts) last.
 */
export async function expireCampaign(redis: RedisLike, campaignKey: string, ttlMs: number, onProgress?: () => void): Promise<{ hosts: number }> {
  if (!Number.isInteger(ttlMs) || ttlMs < 1) throw new RangeError(`retention must be a whole number of ms ≥ 1 (got ${ttlMs})`);
  const hosts = await eachHost(redis, campaignKey, (keys) => redis.crawlExpireKeys(keys.length, ...keys, ttlMs), onProgress);
  // The compact content index's buckets (named by its meta hash, which goes last with the rest).
  const buckets = await compactKeyNames(redis, campaignKey);
  for (let i = 0; i < buckets.length; i += 1000) await redis.crawlExpireKeys(Math.min(1000, buckets.length - i), ...buckets.slice(i, i + 1000), ttlMs);
  await redis.crawlExpireKeys(campaignKeyNames(campaignKey).length, ...campaignKeyNames(campaignKey), ttlMs);
  return { hosts };
}

/** Keys a crawlRetainKeys call is given at most (one slot; a long KEYS list is one long-running script). */
const RETAIN_BATCH = 1000;

/** Deletes `drop` and gives `keep` a time to live of `ttlMs` (null: none): keys of one slot, in calls of RETAIN_BATCH keys. */
async function retainKeys(redis: RedisLike, drop: string[], keep: string[], ttlMs: number | null): Promise<void> {
  const ttl = ttlMs ?? 0;
  const kept = ttl > 0 ? keep : [];
  const batches = Math.ceil(drop.length / RETAIN_BATCH) || (kept.length > 0 ? 1 : 0);
  for (let b = 0; b < batches; b++) {
    const d = drop.slice(b * RETAIN_BATCH, (b + 1) * RETAIN_BATCH);
    // The kept keys go with the last batch of deleted ones: once, and after them.
    const k = b === batches - 1 ? kept : [];
    await redis.crawlRetainKeys(d.length + k.length, ...d, ...k, d.length, ttl);
  }
}

/** The content index's key names (every layout, every distance a campaign may set) that retained-keys.ts lets go, its compact buckets aside. */
function contentKeyNamesDropped(campaignKey: string): string[] {
  const names: string[] = [];
  for (let d = 0; d < MAX_CONTENT_BANDS; d++) {
    const c = contentKeys(campaignKey, d);
    if (d === 0) for (const kind of ['verdict', 'exact', 'payloads', 'meta'] as const) if (!CONTENT_KEYS_KEPT[kind]) names.push(c[kind]);
    if (!CONTENT_KEYS_KEPT.band) for (let i = 0; i <= d; i++) names.push(c.band(i));
  }
  return names;
}

/**
 * A campaign's retention under `retention.keep: summary` (src/redis/retained-keys.ts): the
 * working state nothing reads after the end is deleted now, the rest gets a time to live of
 * `ttlMs` (null: kept until `crawler purge`). Bounded work a call: the hosts a page at a time,
 * one script per slot (a host's keys, a cookie jar, the campaign's own in batches). Idempotent:
 * the marker goes first, each host's keys before the campaign's lists that name the hosts, the
 * compact content buckets before the meta hash that names them, so a retried call finds what
 * is left and does the same again.
 */
export async function retainCampaignSummary(redis: RedisLike, campaignKey: string, ttlMs: number | null, onProgress?: () => void): Promise<{ hosts: number }> {
  if (ttlMs !== null && (!Number.isInteger(ttlMs) || ttlMs < 1)) throw new RangeError(`retention must be a whole number of ms ≥ 1 (got ${ttlMs})`);
  await redis.hset(campaignKeys(campaignKey).control, KEPT_FIELD, 'summary');
  const hosts = await eachHostAndJar(
    redis,
    campaignKey,
    (host) => {
      const { drop, keep } = hostKeysAtEnd(campaignKey, host);
      return retainKeys(redis, drop, keep, ttlMs);
    },
    // A jar holds sites' session cookies: it goes (HOST_KEYS_KEPT.cookies).
    (jar) => retainKeys(redis, HOST_KEYS_KEPT.cookies ? [] : [jar], HOST_KEYS_KEPT.cookies ? [jar] : [], ttlMs),
    onProgress,
  );
  if (!CONTENT_KEYS_KEPT.bucket) await retainKeys(redis, await compactKeyNames(redis, campaignKey), [], ttlMs);
  const own = campaignOwnKeysAtEnd(campaignKey);
  await retainKeys(redis, own.drop, own.keep, ttlMs);
  return { hosts };
}

/** The campaign's own keys (its slot) that go at the end, the content index's among them, and those that stay. */
export function campaignOwnKeysAtEnd(campaignKey: string): { drop: string[]; keep: string[] } {
  const own = campaignKeysAtEnd(campaignKey);
  return { drop: [...contentKeyNamesDropped(campaignKey), ...own.drop], keep: own.keep };
}

/** Whether the campaign's working state was deleted at its end (retainCampaignSummary): its frontiers then read as empty. */
export async function workingStateDropped(redis: RedisLike, campaignKey: string): Promise<boolean> {
  return (await redis.hget(campaignKeys(campaignKey).control, KEPT_FIELD)) === 'summary';
}

/** Redis glob metacharacters escaped, so a campaign key matches only itself in SCAN MATCH. */
const globEscape = (s: string) => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** The SCAN patterns that match every key of the campaign and nothing else (the tag is `{key}` or `{key|host}`). */
export const campaignKeyPatterns = (campaignKey: string) => [`crawl:{${globEscape(campaignKey)}}:*`, `crawl:{${globEscape(campaignKey)}|*`];

/** The servers that hold keys: every master of a cluster, or the one server. */
function keyHolders(redis: RedisLike): Redis[] {
  return 'nodes' in redis && typeof (redis as Cluster).nodes === 'function' && (redis as Cluster).isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

/** Keys of the campaign still in Redis, found by SCAN on every master (bounded work per call, never KEYS). */
export async function scanCampaignKeys(redis: RedisLike, campaignKey: string, onKeys: (node: Redis, keys: string[]) => Promise<void>): Promise<void> {
  for (const node of keyHolders(redis)) {
    for (const match of campaignKeyPatterns(campaignKey)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await onKeys(node, keys);
      } while (cursor !== '0');
    }
  }
}

/**
 * Deletes every key of the campaign. The hosts' keys go first (named by the
 * campaign's structures), then the campaign's own, then a SCAN of every
 * master removes anything the structures did not name (a key written by a
 * session still running, a campaign of an older release). Re-running it
 * after an interruption finishes the job. Returns how many keys went.
 */
export async function purgeCampaign(redis: RedisLike, campaignKey: string): Promise<{ hosts: number; keys: number }> {
  let keys = 0;
  const hosts = await eachHost(redis, campaignKey, async (names) => {
    const n = await redis.del(...names); // not `keys += await …`: concurrent calls would each add to the value read before their await
    keys += n;
  });
  const own = await redis.del(...campaignKeyNames(campaignKey));
  keys += own;
  await scanCampaignKeys(redis, campaignKey, async (node, found) => {
    // One key per UNLINK: on a cluster node the keys found belong to many slots.
    const pipe = node.pipeline();
    for (const k of found) pipe.unlink(k);
    for (const [err, n] of (await pipe.exec()) ?? []) {
      if (err) throw err;
      keys += Number(n);
    }
  });
  return { hosts, keys };
}
