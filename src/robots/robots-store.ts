// robots.txt per host, shared by all campaigns: parsed once, cached in Redis
// for 24 h (RFC 9309 §2.4 allows caching up to a day) and in each worker for
// a minute, so a robots check costs nothing on the hot path.
import { sharedHostKeys } from '../redis/keys';
import type { RedisLike } from '../redis/scripts';
import { RobotsError, RobotsTxt, type RobotsTxtJson } from './robots-txt';

export const ROBOTS_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a 5xx / unreachable verdict is kept before robots.txt is asked again. */
export const ROBOTS_UNAVAILABLE_TTL_MS = 60_000;
const LOCAL_TTL_MS = 60_000;

export type StoredRobots = { state: 'ok'; robots: RobotsTxtJson; status: number | null; fetchedAt: string } | { state: 'unavailable'; detail: string; fetchedAt: string };

export class RobotsStore {
  private readonly local = new Map<string, { at: number; value: StoredRobots; parsed: RobotsTxt | null }>();

  constructor(private readonly redis: RedisLike) {}

  async get(host: string): Promise<{ value: StoredRobots; parsed: RobotsTxt | null } | null> {
    const hit = this.local.get(host);
    if (hit && Date.now() - hit.at < LOCAL_TTL_MS) return hit;
    const raw = await this.redis.get(sharedHostKeys(host).robots);
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
    const entry = { at: Date.now(), value, parsed };
    this.remember(host, entry);
    return entry;
  }

  async put(host: string, value: StoredRobots): Promise<void> {
    const ttl = value.state === 'ok' ? ROBOTS_TTL_MS : ROBOTS_UNAVAILABLE_TTL_MS;
    await this.redis.set(sharedHostKeys(host).robots, JSON.stringify(value), 'PX', ttl);
    this.remember(host, { at: Date.now(), value, parsed: value.state === 'ok' ? RobotsTxt.fromJSON(value.robots) : null });
  }

  private remember(host: string, entry: { at: number; value: StoredRobots; parsed: RobotsTxt | null }): void {
    if (this.local.size > 10_000) this.local.clear();
    this.local.set(host, entry);
  }
}
