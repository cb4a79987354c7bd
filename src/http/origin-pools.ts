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
    const entry = { pool: this.create(origin), connected: 0 };
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
