// The per-host frontier in Redis: a sorted set whose members carry the URL,
// its depth and its referrer, ordered breadth-first (depth, then discovery).
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';

/** page: fetch, store, follow links. sitemap / sitemap-child: fetch, store, enqueue the listed URLs (a child's own index entries are not followed). */
export type EntryKind = 'page' | 'sitemap' | 'sitemap-child';

export interface FrontierEntry {
  url: string;
  depth: number;
  referrer: string | null;
  /** Default page. */
  kind?: EntryKind;
}

export interface EnqueueItem extends FrontierEntry {
  fp: string;
}

// Tab-separated: normalised URLs never contain a tab (the WHATWG parser strips them).
// Pages keep the three-field form, so frontiers written by older releases still decode.
export function encodeEntry(e: FrontierEntry): string {
  const base = `${e.depth}\t${e.url}\t${e.referrer ?? ''}`;
  return e.kind && e.kind !== 'page' ? `${base}\t${e.kind}` : base;
}

export function decodeEntry(member: string): FrontierEntry {
  const [depth, url, referrer, kind] = member.split('\t');
  const entry: FrontierEntry = { url, depth: Number(depth), referrer: referrer ? referrer : null };
  if (kind === 'sitemap' || kind === 'sitemap-child') entry.kind = kind;
  return entry;
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

  /**
   * Marks URLs seen and enqueues the new ones. `added`: how many were new;
   * `awake`: the host's workflow is consuming its frontier and will find them
   * without being woken; `queued`: frontier size afterwards.
   */
  async enqueue(items: EnqueueItem[]): Promise<{ added: number; awake: boolean; queued: number }> {
    const k = this.keys;
    const [added, awake, queued] = await this.redis.crawlEnqueue(k.seen, k.frontier, k.seq, k.awake, ...enqueueArgs(items));
    return { added, awake: awake === 1, queued };
  }

  /** Whether someone must wake the host's workflow for URLs in its frontier. */
  static needsWake(r: { awake: boolean; queued: number }): boolean {
    // Not only when this call added URLs: a step that died after enqueueing
    // and before waking is re-run, finds its URLs already seen, and must
    // still wake the host.
    return !r.awake && r.queued > 0;
  }

  /** The entry to work on: the one a previous attempt claimed, else the head. */
  async claim(): Promise<{ member: string; entry: FrontierEntry } | null> {
    const member = await this.redis.crawlClaim(this.keys.frontier, this.keys.current, this.keys.awake);
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
