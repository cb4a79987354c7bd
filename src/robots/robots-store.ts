// robots.txt per origin, shared by all campaigns: parsed once, cached in
// Redis for 24 h (RFC 9309 §2.4 allows caching up to a day) and in each
// worker for a minute, so a robots check costs nothing on the hot path.
import { findOverride, type ResolveOverrides } from '../http/resolve-overrides';
import { sharedHostKeys } from '../redis/keys';
import type { RedisLike } from '../redis/scripts';
import { RobotsError, RobotsTxt, type RobotsTxtJson } from './robots-txt';

export const ROBOTS_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a 5xx / unreachable verdict is kept before robots.txt is asked again. */
export const ROBOTS_UNAVAILABLE_TTL_MS = 60_000;
const LOCAL_TTL_MS = 60_000;

export type StoredRobots = { state: 'ok'; robots: RobotsTxtJson; status: number | null; fetchedAt: string } | { state: 'unavailable'; detail: string; fetchedAt: string };

/**
 * Whose robots.txt a cache entry holds: the file covers one scheme, host and
 * port (RFC 9309 §2.3), and a campaign that pins the host to an address
 * (fetch.resolve, e.g. a staging box under the production name) reads that
 * address's file, not the one everybody else gets from DNS.
 */
export interface RobotsSource {
  scheme: 'http' | 'https';
  /** The host key: hostname, and the port when it is not the scheme's default. */
  host: string;
  port: number;
  /** The address the campaign pins this host and port to; null when DNS answers. */
  pinnedAddress: string | null;
}

/** The cache entry a robots.txt URL fetched under a campaign's pins (fetch.resolve) belongs to. */
export function robotsSource(robotsUrl: string, pins: ResolveOverrides): RobotsSource {
  const u = new URL(robotsUrl);
  const scheme = u.protocol === 'https:' ? 'https' : 'http';
  const port = u.port ? Number(u.port) : scheme === 'https' ? 443 : 80;
  return { scheme, host: u.host, port, pinnedAddress: findOverride(pins, u.hostname, port)?.address ?? null };
}

/**
 * The Redis key of a cached robots.txt: the host's robots key (tagged with
 * the host key, as its clock), then the scheme, the port and the pinned
 * address, if any.
 */
export function robotsCacheKey(source: RobotsSource): string {
  const pin = source.pinnedAddress === null ? '' : `:pinned:${source.pinnedAddress}`;
  return `${sharedHostKeys(source.host).robots}:${source.scheme}:${source.port}${pin}`;
}

/**
 * What a worker keeps parsed at most. A broad crawl touches thousands of
 * hosts a minute, and a file kept parsed, rules compiled, takes about 4.5
 * times its JSON's length in heap (a 49 KB robots.txt: 300 KB): the cache
 * held up to 10,000 files, whatever their age, which for large files is
 * gigabytes. An entry past its minute only costs a Redis read to bring back.
 * Entries leave oldest first: on expiry, past the count, or past the bytes
 * (their JSON's length), so a few huge files cannot hold the worker's memory.
 */
export const ROBOTS_LOCAL_MAX_ENTRIES = 2_000;
export const ROBOTS_LOCAL_MAX_BYTES = 4 * 1024 * 1024;

interface LocalEntry {
  at: number;
  value: StoredRobots;
  parsed: RobotsTxt | null;
  bytes: number;
}

export interface RobotsStoreOptions {
  maxEntries?: number;
  maxBytes?: number;
  now?: () => number;
}

export class RobotsStore {
  /** Oldest first: an entry is re-inserted when it is remembered again. */
  private readonly local = new Map<string, LocalEntry>();
  private localBytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly now: () => number;

  constructor(
    private readonly redis: RedisLike,
    opts: RobotsStoreOptions = {},
  ) {
    this.maxEntries = opts.maxEntries ?? ROBOTS_LOCAL_MAX_ENTRIES;
    this.maxBytes = opts.maxBytes ?? ROBOTS_LOCAL_MAX_BYTES;
    this.now = opts.now ?? Date.now;
  }

  /** Files kept parsed on this worker now (expired ones included until the next insert sweeps them). */
  get localEntries(): number {
    return this.local.size;
  }

  async get(source: RobotsSource): Promise<{ value: StoredRobots; parsed: RobotsTxt | null } | null> {
    const key = robotsCacheKey(source);
    const hit = this.local.get(key);
    if (hit && this.now() - hit.at < LOCAL_TTL_MS) return hit;
    const raw = await this.redis.get(key);
    if (!raw) return null;
    const value = JSON.parse(raw) as StoredRobots;
    let parsed: RobotsTxt | null;
    try {
      parsed = value.state === 'ok' ? RobotsTxt.fromJSON(value.robots) : null;
    } catch (err) {
      // Written by an older version of the parser (or damaged): fetch robots.txt again.
      if (err instanceof RobotsError) return null;
      throw err;
    }
    const entry = { at: this.now(), value, parsed, bytes: raw.length };
    this.remember(key, entry);
    return entry;
  }

  async put(source: RobotsSource, value: StoredRobots): Promise<void> {
    const key = robotsCacheKey(source);
    const ttl = value.state === 'ok' ? ROBOTS_TTL_MS : ROBOTS_UNAVAILABLE_TTL_MS;
    const json = JSON.stringify(value);
    await this.redis.set(key, json, 'PX', ttl);
    this.remember(key, { at: this.now(), value, parsed: value.state === 'ok' ? RobotsTxt.fromJSON(value.robots) : null, bytes: json.length });
  }

  private remember(key: string, entry: LocalEntry): void {
    const old = this.local.get(key);
    if (old) {
      this.local.delete(key);
      this.localBytes -= old.bytes;
    }
    this.local.set(key, entry);
    this.localBytes += entry.bytes;
    // Oldest first: stop at the first entry that is fresh while the bounds hold.
    for (const [k, e] of this.local) {
      if (this.local.size <= this.maxEntries && this.localBytes <= this.maxBytes && entry.at - e.at < LOCAL_TTL_MS) break;
      this.local.delete(k);
      this.localBytes -= e.bytes;
    }
  }
}
