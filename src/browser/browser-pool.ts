// One Chromium per worker process, started on the first page a campaign
// renders and shared by every host session of the process, each in a
// browser context of its own; a bounded number of pages render at once
// (browser.maxPagesAtOnce), the others wait their turn.
//
// The browser's life (docs/rendering.md, "The browser's life"): its process
// tree's memory is read from /proc at the end of a page (at most every
// MEASURE_EVERY_MS, and after the first page of each browser); once it holds
// more than browser.maxMemoryMb, or has rendered browser.pagesPerBrowser
// pages, the browser is restarted between pages: new pages wait, pages
// rendering finish (or end at their deadline), then it is closed and the
// next page starts a fresh one, the sessions making their contexts again on
// it. A browser that dies (crashed, killed) is started again by the next
// page that needs it.
import type { Browser } from 'playwright-core';
import type { Logger } from '../log/logger';
import { childWithArg, treeMemory } from './process-memory';
import { SharedContexts } from './shared-contexts';

/**
 * Chromium's own network is closed: every request of a page is answered by
 * a route (src/browser/browser-fetcher.ts) from the crawler's HTTP client,
 * and a request that escapes the routes (a WebSocket, a redirect Chromium
 * follows by itself) fails to resolve instead of reaching the web past the
 * address policy, proxies and politeness.
 */
export const CHROMIUM_ARGS = ['--disable-dev-shm-usage', '--host-resolver-rules=MAP * ~NOTFOUND'];

/** The browser's memory is read at the end of a page at most this often (a walk of /proc costs a few ms), and after the first page of each browser. */
export const MEASURE_EVERY_MS = 2_000;
/** A Chromium that failed to start is not tried again for this long: the pages in between fail at once instead of each waiting on a launch. */
export const LAUNCH_RETRY_MS = 5_000;
const MiB = 1024 * 1024;

/** The settings of the pool, as the page asking for a turn has them (browser.* of its campaign). */
export interface PoolLimits {
  maxPagesAtOnce: number;
  /** The browser is restarted between pages once its process tree holds more (PSS, MiB). */
  maxMemoryMb: number;
  /** … or once it has rendered this many pages. */
  pagesPerBrowser: number;
}

/** Why a browser was replaced: its memory, its page count, or it died (crashed, killed). */
export type RestartReason = 'memory' | 'pages' | 'crashed';

/** What the pool reports (the worker's metrics). */
export interface BrowserPoolEvents {
  restarted?(reason: RestartReason): void;
  measured?(bytes: number): void;
}

export interface BrowserPoolStats {
  /** Browsers replaced, by reason. */
  restarts: Record<RestartReason, number>;
  /** Browsers started. */
  launches: number;
  /** The browser's process tree at its last reading (PSS, bytes), and the most any reading found. */
  memoryBytes: number;
  peakMemoryBytes: number;
}

/** Launches Chromium as the workers do (root: without its sandbox, which refuses to start as root). */
export async function launchChromium(executablePath: string, extraArgs: string[] = []): Promise<Browser> {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  // Loaded on the first launch, not with the worker: playwright-core is two
  // bundles of 6–7 MB of source (kept whole in V8's heap once loaded) that a
  // worker whose campaigns render nothing never needs (docs/benchmarks-history.md,
  // issue 27 worker memory).
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath, headless: true, args: [...(root ? ['--no-sandbox'] : []), ...CHROMIUM_ARGS, ...extraArgs] });
}

/** Throws, saying why, when Chromium cannot start (`crawler crawl --render browser` checks it before anything starts). */
export async function checkChromiumStarts(executablePath: string): Promise<void> {
  let b: Browser;
  try {
    b = await launchChromium(executablePath);
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).split('\n').find((l) => l.trim()) ?? 'unknown error';
    throw new Error(
      `Chromium (${executablePath}) does not start: ${why.slice(0, 300)}. Install Debian's \`chromium-headless-shell\` package (apt-get install chromium-headless-shell) or set CHROMIUM_PATH to a working Chromium or Chrome.`,
      { cause: err },
    );
  }
  await b.close().catch(() => undefined);
}

export class BrowserPool {
  #browser: Promise<Browser> | null = null;
  /** A command-line switch only this browser has, to find its process in /proc. */
  #marker = '';
  #pid: number | null = null;
  #rendering = 0;
  #waiters = new Set<() => void>();
  #closed = false;
  /** Pages started on the current browser. */
  #pages = 0;
  #measuredAt = 0;
  #measuring: Promise<void> | null = null;
  #restartFor: RestartReason | null = null;
  #restarting: Promise<void> | null = null;
  #launchFailed: { at: number; err: unknown } | null = null;
  readonly stats: BrowserPoolStats = { restarts: { memory: 0, pages: 0, crashed: 0 }, launches: 0, memoryBytes: 0, peakMemoryBytes: 0 };
  /** The browser contexts a campaign's sessions share on this worker (src/browser/shared-contexts.ts). */
  readonly contexts = new SharedContexts(() => this.browser());

  constructor(
    /** Chromium's executable (src/stack/chromium.ts, passed in by the worker). */
    private readonly executable: () => Promise<string>,
    private readonly log?: Logger,
    private readonly events: BrowserPoolEvents = {},
  ) {}

  /** A restart waiting for the pages rendering to end (new pages wait meanwhile), or under way; null otherwise. */
  get restartPending(): RestartReason | null {
    return this.#restartFor;
  }

  /** The process's Chromium, started on first use (and again after it died or was restarted). */
  browser(): Promise<Browser> {
    if (this.#closed) return Promise.reject(new Error('the worker is closing: no browser'));
    if (this.#launchFailed && Date.now() - this.#launchFailed.at < LAUNCH_RETRY_MS) return Promise.reject(this.#launchFailed.err);
    if (!this.#browser) {
      const marker = `--crawler-browser=${process.pid}.${this.stats.launches + 1}`;
      const p = (async () => {
        const b = await launchChromium(await this.executable(), [marker]);
        b.on('disconnected', () => this.#died(p));
        return b;
      })();
      this.#browser = p;
      this.#marker = marker;
      this.#pid = null;
      // Counted from here: the pages rendering now are this browser's, and its first page to end reads its memory.
      this.#pages = this.#rendering;
      this.#measuredAt = 0;
      this.stats.launches++;
      p.then(
        () => void (this.#launchFailed = null),
        (err: unknown) => {
          if (this.#browser !== p) return;
          this.#browser = null;
          this.#launchFailed = { at: Date.now(), err };
        },
      );
    }
    return this.#browser;
  }

  /** A browser gone without the pool closing it (the pool forgets a browser before closing it). */
  #died(p: Promise<Browser>): void {
    if (this.#browser !== p || this.#closed) return;
    this.log?.warn('browser died; the next page starts another', { pages: this.#pages });
    this.#browser = null;
    this.#pages = 0;
    this.#measuredAt = 0;
    // A restart it was waiting for is moot: the next page starts a fresh browser anyway.
    this.#restartFor = null;
    this.#count('crashed');
    this.#wake();
  }

  #count(reason: RestartReason): void {
    this.stats.restarts[reason]++;
    this.events.restarted?.(reason);
  }

  /**
   * Waits for one of `limits.maxPagesAtOnce` rendering turns of this
   * process, and for a restart to be over; returns the function that gives
   * the turn back.
   */
  async turn(limits: PoolLimits, signal: AbortSignal): Promise<() => void> {
    while (this.#rendering >= limits.maxPagesAtOnce || this.#restartFor || this.#restarting) {
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
    this.#pages++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#rendering--;
      this.#afterPage(limits);
      this.#wake();
    };
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  /** After each page: its count, then (now and then) its memory, may call for a restart. */
  #afterPage(limits: PoolLimits): void {
    if (this.#pages >= limits.pagesPerBrowser) return this.#restart('pages');
    if (this.#measuring || Date.now() - this.#measuredAt < MEASURE_EVERY_MS) return this.#restartIfIdle();
    this.#measuring = this.measure()
      .then((bytes) => {
        if (bytes !== null && bytes > limits.maxMemoryMb * MiB) this.#restart('memory');
      })
      .catch((err: unknown) => this.log?.debug('browser memory not read', { error: String(err).slice(0, 300) }))
      .finally(() => (this.#measuring = null));
    this.#restartIfIdle();
  }

  /** Resolves once no memory reading and no restart is under way (what the pages that ended asked for is done). */
  async settled(): Promise<void> {
    while (this.#measuring || this.#restarting) await Promise.all([this.#measuring, this.#restarting]);
  }

  /**
   * The memory the browser's process tree holds (PSS, bytes: see
   * src/browser/process-memory.ts), read now; null without a running browser.
   */
  async measure(): Promise<number | null> {
    const p = this.#browser;
    const marker = this.#marker;
    if (!p || !(await p.catch(() => null))) return null;
    const pid = this.#pid ?? (await childWithArg(process.pid, marker));
    if (pid === null || this.#browser !== p) return null;
    this.#pid = pid;
    const { bytes } = await treeMemory(pid);
    if (this.#browser !== p || bytes === 0) return null;
    this.#measuredAt = Date.now();
    this.stats.memoryBytes = bytes;
    this.stats.peakMemoryBytes = Math.max(this.stats.peakMemoryBytes, bytes);
    this.events.measured?.(bytes);
    return bytes;
  }

  #restart(reason: RestartReason): void {
    if (!this.#browser || this.#closed) return;
    this.#restartFor ??= reason;
    this.#restartIfIdle();
  }

  /** A restart waits for the pages rendering: new ones wait in turn() meanwhile. */
  #restartIfIdle(): void {
    const reason = this.#restartFor;
    if (!reason || this.#rendering > 0 || this.#restarting) return;
    const p = this.#browser;
    // Forgotten first: its 'disconnected' is then not taken for a crash.
    this.#browser = null;
    const pages = this.#pages;
    const memoryMb = Math.round(this.stats.memoryBytes / MiB);
    this.#pages = 0;
    this.#measuredAt = 0;
    this.#count(reason);
    this.#restarting = (async () => {
      await (await p?.catch(() => null))?.close().catch(() => undefined);
      this.log?.info('browser restarted', { reason, pages, memoryMb });
    })().finally(() => {
      this.#restarting = null;
      this.#restartFor = null;
      this.#wake();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.contexts.close();
    const b = this.#browser;
    this.#browser = null;
    await this.#restarting;
    await (await b?.catch(() => null))?.close().catch(() => undefined);
    this.#wake();
  }
}
