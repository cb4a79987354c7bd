// The direct connections of a campaign's HTTP client: one undici Pool per
// origin, as undici's Agent keeps them, and one thing the Agent cannot do:
// let an origin go. A host whose session ended with nothing left to fetch
// (most hosts of a broad crawl have one page) would otherwise keep its idle
// keep-alive connection for as long as the server allows (up to
// KEEP_ALIVE_MAX_MS): a socket, and a pool of about 40 KB in the worker's heap
// (its request queue alone preallocates 2,048 slots), per finished host. In
// bench (k), 1,300 of them at once: 50 MB of a worker's RSS (issue 27).
//
// Ours rather than the Agent's map, because the Agent has no public way to drop
// one origin: closing a pool it still maps would fail the next request to that
// origin. Here the origin leaves the map first, so a later request opens a new
// pool, and the old one closes once its requests in flight are answered.
import type { Pool } from 'undici';

export class OriginPools {
  readonly #pools = new Map<string, { pool: Pool; connected: number }>();
  #closed = false;

  /** `create`: a new pool for an origin (its connector, timeouts and client factory). */
  constructor(private readonly create: (origin: string) => Pool) {}

  /** The origin's pool, made on first use; dropped again when its last connection goes, as the Agent does. */
  for(origin: string): Pool {
    if (this.#closed) throw new Error('the HTTP client is closed');
    const known = this.#pools.get(origin);
    if (known) return known.pool;
    const entry = { pool: withLightQueue(this.create(origin)), connected: 0 };
    const dropIfUnused = (wasConnected: boolean) => {
      if (wasConnected) entry.connected--;
      if (entry.connected > 0 || this.#pools.get(origin) !== entry) return;
      this.#pools.delete(origin);
      if (!entry.pool.closed && !entry.pool.destroyed) entry.pool.close().catch(() => undefined);
    };
    entry.pool
      .on('connect', () => void entry.connected++)
      .on('disconnect', () => dropIfUnused(true))
      .on('connectionError', () => dropIfUnused(false));
    this.#pools.set(origin, entry);
    return entry.pool;
  }

  /** Lets the origin's connections go once their requests in flight end; a later request to it opens a new one. */
  release(origin: string): void {
    const entry = this.#pools.get(origin);
    if (!entry) return;
    this.#pools.delete(origin);
    if (!entry.pool.closed && !entry.pool.destroyed) entry.pool.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()].map((e) => e.pool);
    this.#pools.clear();
    await Promise.all(pools.map((p) => (p.closed || p.destroyed ? undefined : p.close().catch(() => undefined))));
  }
}

/**
 * The queue of requests waiting for one of a pool's connections, as undici's
 * Pool uses it (isEmpty, push, shift; shift gives null when empty), in an
 * array that grows with what waits. undici's own (FixedQueue) preallocates
 * 2,048 slots per pool: 16 KB of heap for each origin held, whose queue
 * almost never holds a request (a host's requests go one at a time). In bench
 * (l), 5.4 MB of a worker's 70 MB live heap.
 */
export class LightQueue<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  isEmpty(): boolean {
    return this.#head === this.#items.length;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | null {
    if (this.#head === this.#items.length) return null;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item as T;
  }
}

/**
 * The pool with its waiting queue swapped for a LightQueue, while it is still
 * empty. undici keeps the queue under a private symbol; if a later undici
 * names or shapes it otherwise, the pool is left as it is (test/unit/origin-pools.test.ts
 * says so by failing, not the crawler by breaking).
 */
export function withLightQueue(pool: Pool): Pool {
  const slot = pool as unknown as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(pool).find((k) => k.description === 'queue');
  const queue = key ? (slot[key] as { isEmpty?: () => boolean; push?: unknown; shift?: unknown } | undefined) : undefined;
  if (key && queue && typeof queue.push === 'function' && typeof queue.shift === 'function' && queue.isEmpty?.() === true) slot[key] = new LightQueue();
  return pool;
}
