// One Chromium per worker process, started on the first page a campaign
// renders and shared by every host session of the process, each in a
// browser context of its own; a bounded number of pages render at once
// (browser.maxPagesAtOnce), the others wait their turn. A browser that dies
// (crashed, killed) is started again by the next page that needs it.
import { chromium, type Browser } from 'playwright-core';
import type { Logger } from '../log/logger';

/**
 * Chromium's own network is closed: every request of a page is answered by
 * a route (src/browser/browser-fetcher.ts) from the crawler's HTTP client,
 * and a request that escapes the routes (a WebSocket, a redirect Chromium
 * follows by itself) fails to resolve instead of reaching the web past the
 * address policy, proxies and politeness.
 */
export const CHROMIUM_ARGS = ['--disable-dev-shm-usage', '--host-resolver-rules=MAP * ~NOTFOUND'];

export class BrowserPool {
  #browser: Promise<Browser> | null = null;
  #rendering = 0;
  #waiters = new Set<() => void>();
  #closed = false;

  constructor(
    /** Chromium's executable (src/stack/chromium.ts, passed in by the worker). */
    private readonly executable: () => Promise<string>,
    private readonly log?: Logger,
  ) {}

  /** The process's Chromium, started on first use (and again after it died). */
  browser(): Promise<Browser> {
    if (this.#closed) return Promise.reject(new Error('the worker is closing: no browser'));
    if (!this.#browser) {
      const p = (async () => {
        const executablePath = await this.executable();
        // Chromium refuses to run as root with its sandbox (containers); elsewhere it keeps it.
        const root = typeof process.getuid === 'function' && process.getuid() === 0;
        const b = await chromium.launch({ executablePath, headless: true, args: [...(root ? ['--no-sandbox'] : []), ...CHROMIUM_ARGS] });
        b.on('disconnected', () => {
          if (this.#browser === p) this.#browser = null;
        });
        return b;
      })();
      this.#browser = p;
      p.catch(() => {
        if (this.#browser === p) this.#browser = null;
      });
    }
    return this.#browser;
  }

  /** Waits for one of `limit` rendering turns of this process; returns the function that gives it back. */
  async turn(limit: number, signal: AbortSignal): Promise<() => void> {
    while (this.#rendering >= limit) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.#waiters.add(wake);
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    this.#rendering++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#rendering--;
      for (const w of [...this.#waiters]) w();
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    const b = this.#browser;
    this.#browser = null;
    await (await b?.catch(() => null))?.close().catch(() => undefined);
  }
}
