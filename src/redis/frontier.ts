// The per-host frontier in Redis: a sorted set whose members carry the URL,
// its depth and its referrer, ordered breadth-first (depth, then discovery).
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';

export interface FrontierEntry {
  url: string;
  depth: number;
  referrer: string | null;
}

export interface EnqueueItem extends FrontierEntry {
  fp: string;
}

// Tab-separated: normalised URLs never contain a tab (the WHATWG parser strips them).
export function encodeEntry(e: FrontierEntry): string {
  return `${e.depth}\t${e.url}\t${e.referrer ?? ''}`;
}

export function decodeEntry(member: string): FrontierEntry {
  const [depth, url, referrer] = member.split('\t');
  return { url, depth: Number(depth), referrer: referrer ? referrer : null };
}

function enqueueArgs(items: EnqueueItem[]): (string | number)[] {
  const argv: (string | number)[] = [];
  for (const it of items) argv.push(it.fp, it.depth, encodeEntry(it));
  return argv;
}

export class Frontier {
  private readonly keys: ReturnType<typeof hostKeys>;

  constructor(private readonly redis: RedisLike, campaignKey: string, readonly host: string) {
    this.keys = hostKeys(campaignKey, host);
  }

  /** Marks URLs seen and enqueues the new ones; returns how many were new. */
  async enqueue(items: EnqueueItem[]): Promise<number> {
    if (items.length === 0) return 0;
    const k = this.keys;
    return this.redis.crawlEnqueue(k.seen, k.frontier, k.seq, ...enqueueArgs(items));
  }

  /** The entry to work on: the one a previous attempt claimed, else the head. */
  async claim(): Promise<{ member: string; entry: FrontierEntry } | null> {
    const member = await this.redis.crawlClaim(this.keys.frontier, this.keys.current);
    return member ? { member, entry: decodeEntry(member) } : null;
  }

  /** Finishes an entry: removes it, counts the outcome once, enqueues same-host links. */
  async commit(member: string, outcome: 'fetched' | 'failed' | 'skipped', bytes: number, links: EnqueueItem[]): Promise<{ removed: boolean; added: number; remaining: number }> {
    const k = this.keys;
    const [removed, added, remaining] = await this.redis.crawlCommit(k.seen, k.frontier, k.seq, k.current, k.stats, member, outcome, bytes, ...enqueueArgs(links));
    return { removed: removed === 1, added, remaining };
  }

  async peek(): Promise<FrontierEntry | null> {
    const [head] = await this.redis.zrange(this.keys.frontier, 0, 0);
    return head ? decodeEntry(head) : null;
  }

  size(): Promise<number> {
    return this.redis.zcard(this.keys.frontier);
  }

  async stats(): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(this.keys.stats);
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
  }
}
