// One browser context for the host sessions of a campaign on a worker
// (issue 41), instead of one per session. Each session still has its own tab
// and its own routes (every request of a tab goes through that session's
// HTTP client, cookie jar and politeness: src/browser/page-routes.ts); what
// they share is what a browser shares between its tabs: per-origin storage
// and the browser's own cookie copy (which no request of ours sends: the
// campaign's jar does, src/browser/page-requests.ts).
//
// Why: Chromium ties a renderer process to a context. With a context per
// session and several sessions rendering at once, each navigation of a tab
// started a fresh renderer process (measured: 51–64 renderers for 45 pages
// over three sessions at once, 5 with one context), and the process starts
// were most of what a page cost Chromium.
//
// A context is replaced after pagesPerContext pages (its cache and memory
// grow): sessions that ask for a tab from then on get a new one, and the old
// one is closed once its last session has left it. One whose browser died is
// replaced at once. One no session uses is closed after IDLE_CLOSE_MS.
import type { Browser, BrowserContext } from 'playwright-core';

/** A context with no session in it is closed after this long (a campaign that stopped rendering here leaves nothing open). */
export const IDLE_CLOSE_MS = 30_000;

export interface ContextOptions {
  userAgent: string;
}

/** A session's hold on a shared context: `pageStarted` counts its pages, `leave` gives the hold back. */
export interface ContextLease {
  readonly context: BrowserContext;
  /** The context has rendered its pagesPerContext pages, or its browser died: the session leaves it and asks again. */
  readonly retired: boolean;
  pageStarted(): void;
  leave(): Promise<void>;
}

class Shared {
  users = 0;
  pages = 0;
  retired = false;
  idleTimer: NodeJS.Timeout | null = null;
  constructor(
    readonly context: BrowserContext,
    readonly browser: Browser,
  ) {}
  get gone(): boolean {
    return !this.browser.isConnected();
  }
}

export class SharedContexts {
  readonly #current = new Map<string, Promise<Shared>>();
  /** The context #current's promise resolved to, while it is the key's current one (none while a new one is being made). */
  readonly #made = new Map<string, Shared>();

  constructor(
    /** The worker's browser (BrowserPool.browser: started on first use, again after it died or was restarted). */
    private readonly browser: () => Promise<Browser>,
    private readonly idleCloseMs = IDLE_CLOSE_MS,
  ) {}

  /**
   * A hold on the context of `key` (a campaign's sessions share one), made
   * when there is none, or when the current one is retired or its browser
   * gone; `pagesPerContext`: after that many pages started in it, it retires.
   */
  async lease(campaign: string, options: ContextOptions, pagesPerContext: number): Promise<ContextLease> {
    // A campaign whose settings changed its user agent gets a context of the new one; the old closes as its sessions leave it.
    const key = `${campaign}\n${options.userAgent}`;
    const pending = this.#current.get(key);
    let shared = pending ? await pending.catch(() => null) : null;
    if (!shared || shared.retired || shared.gone) {
      // Made once for every session asking at the same time.
      const current = this.#current.get(key);
      if (current === pending || current === undefined) {
        this.#made.delete(key);
        const making = this.#make(options);
        this.#current.set(key, making);
        making.then(
          (made) => this.#current.get(key) === making && this.#made.set(key, made),
          () => this.#current.get(key) === making && this.#current.delete(key),
        );
      }
      if (shared) this.#retire(key, shared);
      shared = await this.#current.get(key)!;
    }
    return this.#hold(key, shared, pagesPerContext);
  }

  async #make(options: ContextOptions): Promise<Shared> {
    const browser = await this.browser();
    const context = await browser.newContext({ serviceWorkers: 'block', acceptDownloads: false, userAgent: options.userAgent });
    return new Shared(context, browser);
  }

  #hold(key: string, s: Shared, pagesPerContext: number): ContextLease {
    s.users++;
    if (s.idleTimer) clearTimeout(s.idleTimer);
    s.idleTimer = null;
    let left = false;
    return {
      context: s.context,
      get retired() {
        return s.retired || s.gone;
      },
      pageStarted: () => {
        if (++s.pages >= pagesPerContext) this.#retire(key, s);
      },
      leave: async () => {
        if (left) return;
        left = true;
        s.users--;
        if (s.users > 0) return;
        if (s.retired || s.gone) return void (await s.context.close().catch(() => undefined));
        s.idleTimer = setTimeout(() => {
          if (s.users > 0) return;
          this.#retire(key, s);
          void s.context.close().catch(() => undefined);
        }, this.idleCloseMs);
        s.idleTimer.unref();
      },
    };
  }

  /** No new session gets it; it closes once its last session leaves (at once with none in it). */
  #retire(key: string, s: Shared): void {
    s.retired = true;
    if (this.#made.get(key) === s) {
      this.#made.delete(key);
      this.#current.delete(key);
    }
    if (s.users === 0) void s.context.close().catch(() => undefined);
  }

  /** Closes every context (the worker is closing; the browser goes too). */
  async close(): Promise<void> {
    const all = [...this.#current.values()];
    this.#current.clear();
    this.#made.clear();
    await Promise.all(all.map((p) => p.then((s) => (s.idleTimer && clearTimeout(s.idleTimer), s.context.close())).catch(() => undefined)));
  }
}
