// `render: browser` (docs/rendering.md): a Fetcher that fetches a page with
// the crawler's HTTP client, as the HTTP fetcher does, and then renders it
// in Chromium. The browser never touches the network itself: every request
// the page makes is routed here and answered from the same HTTP client
// (address policy, DNS cache, proxies, cookies, credentials, size and time
// limits), and each exchange is handed to `record` for the WARC. The
// document is answered from the response already fetched, so the page is
// requested once; what the fetch stage gets back is that response as the
// server sent it (the WARC holds it, for replay) plus `rendered`, the DOM
// after the scripts ran, which link extraction and the handler read.
//
// A page is done at `load`, then once no request of it has been in flight
// for browser.quietMs and its thread was idle, and at browser.pageTimeoutMs
// at the latest (what it loaded by then is what it has); scrolling, the
// behaviors and the handler's onRender come before its DOM is taken (src/browser/page-steps.ts),
// and the DOM of its other frames is taken with it. Its requests to its own
// host go out at most SAME_HOST_AT_ONCE at a time, those to other hosts in
// those hosts' turns (robots.txt, clock), and methods that change a site,
// WebSockets and event streams are refused (src/browser/page-routes.ts
// decides and answers each request).
import type { BrowserContext, CDPSession, Page } from 'playwright-core';
import type { Logger } from '../log/logger';
import type { FetchResult } from '../http/http-types';
import type { Fetcher } from '../http/fetcher';
import { isHtml } from '../http/media-type';
import type { BrowserPool } from './browser-pool';
import type { ContextLease } from './shared-contexts';
import { InFlight } from './page-done';
import { contentOf, crashError, RENDER_ERROR, targetGone, watchPage, type PageWatch } from './page-watch';
import { PageRoutes, SessionCache, type PageNetwork } from './page-routes';
import { frameDocuments } from './frames';
import type { PageFetcher, RenderedDocument } from './page-fetcher';
import type { RenderHooks } from './page-hook';
import { settlePage, type RenderEntry } from './page-steps';
import type { WarcPlace } from './page-fetcher';

// What other modules and tests name from here.
export { SAME_HOST_AT_ONCE, fulfilHeaders, routeDecision, type PageNetwork, type PageRequest, type RouteDecision } from './page-routes';
export { InFlight } from './page-done';
export type { RenderEntry } from './page-steps';

/** Taking the DOM of a page whose script keeps its thread busy must not hang the session past its deadline by more than this. */
const CONTENT_GRACE_MS = 5_000;
/**
 * browser.screenshot: a full-page PNG is cut at this height (Chromium's
 * own texture limit; an endless feed would otherwise make an image of
 * hundreds of megabytes), and each shot given at most this long, after the DOM is taken.
 */
export const SCREENSHOT_MAX_HEIGHT = 16_384;
const SCREENSHOT_TIMEOUT_MS = 10_000;
/** Browsertrix's thumbnail: a 16:9 JPEG this wide (640 × 360), of the top of the page. */
export const THUMBNAIL_WIDTH = 640;
const THUMBNAIL_QUALITY = 75;

/** One request of a page, answered from the network: what the WARC gets. */
export interface SubresourceCapture {
  url: string;
  /** Chromium's resource type: document (a frame), stylesheet, script, image, font, media, fetch, xhr… */
  resourceType: string;
  response: FetchResult;
  /** The page that asked for it. */
  page: string;
}

export interface RenderSettings {
  pageTimeoutMs: number;
  quietMs: number;
  maxPagesAtOnce: number;
  pagesPerContext: number;
  /** The worker's browser is restarted between pages past this much memory (MiB) or this many pages (src/browser/browser-pool.ts). */
  maxMemoryMb: number;
  pagesPerBrowser: number;
  /** Take screenshots of each rendered page (its view, a thumbnail, the full page) and hand each to `screenshot` (default off). */
  screenshot?: boolean;
  /** Hand each rendered page's text to `text` (default off). */
  text?: boolean;
  /** Scroll each page to its bottom before its DOM is taken, for lazy content (src/browser/scroll.ts; default off). */
  scroll?: boolean;
  /** Behaviors before the DOM is taken (src/browser/behaviors.ts; each default off): inner scrolling boxes, details/tabs/accordions, autoclick, autoplay. */
  scrollBoxes?: boolean;
  expand?: boolean;
  autoclick?: boolean;
  autoplay?: boolean;
}

/** A rendered page's text (its body's innerText): what the WARC gets as a resource record. */
export interface TextCapture {
  /** The page's URL (as fetched). */
  page: string;
  text: string;
  takenAt: Date;
}

/** browser.text: a page's text is cut at this many characters (an endless feed's would be megabytes). */
export const MAX_TEXT_CHARS = 1024 * 1024;

/**
 * The screenshots of a rendered page, named as Browsertrix Crawler names them
 * (its `--screenshot view,thumbnail,fullPage`), which is what ReplayWeb.page
 * and Browsertrix's QA look up: `view` the viewport at the top of the page
 * (PNG), `thumbnail` the same scaled to 640 px wide (JPEG), `fullPage` the
 * whole page (PNG, cut at SCREENSHOT_MAX_HEIGHT).
 */
export const SCREENSHOT_KINDS = ['view', 'thumbnail', 'fullPage'] as const;
export type ScreenshotKind = (typeof SCREENSHOT_KINDS)[number];

/** One screenshot of a rendered page: what the WARC gets as a resource record, `urn:<kind>:<page URL>`. */
export interface ScreenshotCapture {
  /** The page's URL (as fetched). */
  page: string;
  kind: ScreenshotKind;
  image: Buffer;
  /** image/png, or image/jpeg for the thumbnail. */
  contentType: string;
  takenAt: Date;
}

export interface BrowserFetcherOptions {
  pool: BrowserPool;
  /** The campaign's HTTP fetcher (with its cookie jar): the document and every request of the page go through it. */
  inner: Fetcher;
  /** The session's host (hostKey form): the page's requests to it go out under the session's clock. */
  host: string;
  /** robots.txt of the host, null when not respected. */
  allowedByRobots: ((url: string) => boolean) | null;
  /**
   * Sessions with the same key share one browser context on this worker (a
   * campaign's: src/browser/shared-contexts.ts), each with a tab of its own;
   * absent, the session has a context of its own.
   */
  contextKey?: string;
  /** Archives one exchange of a page (WARC records), before the browser gets the answer. */
  record(capture: SubresourceCapture): Promise<void>;
  /** Archives one screenshot of a rendered page (called only with settings.screenshot on), one at a time. */
  screenshot?(capture: ScreenshotCapture): Promise<void>;
  /** Archives a rendered page's text (called only with settings.text on): where its record is. */
  text?(capture: TextCapture): Promise<WarcPlace>;
  settings: RenderSettings;
  userAgent: string;
  /** fetch.maxRedirects: redirects of a subresource followed here, each hop archived. */
  maxRedirects: number;
  /** The handler's render hooks (onRender), run in the page before its DOM is taken; absent without any. */
  hooks?: RenderHooks;
  /** Other hosts' turns, earlier captures, scope.exclude (src/browser/page-routes.ts); without it requests to other hosts are refused. */
  network?: PageNetwork;
  log?: Logger;
}

export interface RenderingFetcher extends PageFetcher {
  /** Renders a page already fetched (`render: auto` decides which: src/browser/adaptive-fetcher.ts). */
  render(doc: FetchResult, url: string, signal: AbortSignal, entry?: RenderEntry): Promise<RenderedDocument>;
  /** Closes the session's browser context. */
  close(): Promise<void>;
}

/** Whether a fetched response is a page to render: a 2xx HTML page entry (redirects, errors, sitemaps and embeds are not). */
export function shouldRender(kind: string | undefined, res: FetchResult): boolean {
  return kind === 'page' && res.status >= 200 && res.status < 300 && !res.stoppedRedirect && isHtml(res.headers['content-type']) && res.body.length > 0;
}

export function browserFetcher(o: BrowserFetcherOptions): RenderingFetcher {
  const contexts = new SessionContext(o);
  const cache = new SessionCache();

  async function render(doc: FetchResult, url: string, signal: AbortSignal, entry: RenderEntry = { label: null, depth: 0 }): Promise<RenderedDocument> {
    const started = Date.now();
    const seen: { routes?: PageRoutes } = {};
    const out = await renderOnce(doc, url, signal, entry, started, seen);
    // Read once the page's requests still in flight have ended (renderOnce waits for them).
    return { ...out, hostRequestsEndedAt: Math.max(started, seen.routes?.ownHostEndedAt ?? 0) };
  }

  async function renderOnce(doc: FetchResult, url: string, signal: AbortSignal, entry: RenderEntry, started: number, seen: { routes?: PageRoutes }): Promise<RenderedDocument> {
    const deadlineAt = started + o.settings.pageTimeoutMs;
    const release = await o.pool.turn(o.settings, signal);
    // Ends the page's requests still in flight when it is done (or the session is cancelled).
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const inflight = new InFlight();
    let routes: PageRoutes | undefined;
    let watch: PageWatch | undefined;
    let clean = false;
    try {
      const { context, page: p } = await contexts.tab();
      // A crash ends the page's requests in flight, so that it ends at once (RENDER_CRASHED) rather than at its deadline.
      watch = watchPage(p, context.browser(), () => stop.abort());
      routes = seen.routes = new PageRoutes(o, p, doc, url, inflight, cache, stop.signal, deadlineAt);
      contexts.routeTo(routes);

      // Load (or a navigation away), quiet and idle, scrolled (browser.scroll), the behaviors, the handler's onRender: src/browser/page-steps.ts.
      const { done, scroll, behaviors, hook } = await settlePage({ page: p, url, entry, inflight, settings: o.settings, deadlineAt, hooks: o.hooks, log: o.log, watch });
      const html = await withTimeout(contentOf(p), Math.max(0, deadlineAt - Date.now()) + CONTENT_GRACE_MS);
      if (html === null)
        return failed(
          url,
          started,
          routes.requests,
          RENDER_ERROR.timeout,
          `the page kept its thread busy past browser.pageTimeoutMs (${o.settings.pageTimeoutMs} ms): no DOM taken`,
        );
      // Links are in every frame's DOM, not only the main frame's (src/browser/frames.ts).
      const frames = await frameDocuments(p, Math.max(deadlineAt, Date.now()) + CONTENT_GRACE_MS);
      const textRecord = o.settings.text && o.text ? await takeText(p, url, o, Math.max(deadlineAt, Date.now()) + CONTENT_GRACE_MS) : null;
      if (o.settings.screenshot && o.screenshot) await takeScreenshots(p, url, o);
      clean = true;
      return {
        html,
        url: sameOrigin(p.url(), url),
        done,
        ms: Date.now() - started,
        requests: routes.requests,
        ...(frames.length ? { frames } : {}),
        ...(scroll ? { scroll } : {}),
        ...(behaviors ? { behaviors: behaviors.report, behaviorLinks: behaviors.links } : {}),
        ...(hook ? { hook } : {}),
        ...(textRecord ? { textRecord } : {}),
      };
    } catch (err) {
      if (signal.aborted) throw err;
      const crashed = watch?.crashed ?? (contexts.browserGone() ? 'browser' : targetGone(err) ? 'tab' : null);
      if (crashed) {
        const e = crashError(crashed);
        o.log?.warn('render crashed', { url, crashed, error: String(err).slice(0, 300) });
        return failed(url, started, routes?.requests ?? 0, e.code, e.message);
      }
      o.log?.warn('render failed', { url, error: String(err).slice(0, 500) });
      return failed(url, started, routes?.requests ?? 0, RENDER_ERROR.failed, err instanceof Error ? err.message.split('\n')[0]!.slice(0, 500) : String(err).slice(0, 500));
    } finally {
      watch?.dispose();
      stop.abort();
      signal.removeEventListener('abort', onAbort);
      // The tab goes on to the session's next page; one whose page failed is closed, and the next page gets a new tab.
      await contexts.leave(clean);
      await routes?.settled();
      release();
    }
  }

  return {
    async fetch(request, ctx) {
      const got = await o.inner.fetch(request, ctx);
      if (!got.ok || !shouldRender(request.kind, got.response)) return got;
      const rendered = await render(got.response, request.url, ctx.signal, { label: request.label ?? null, depth: request.depth ?? 0 });
      return { ok: true, response: { ...got.response, rendered } };
    },
    render,
    close: () => contexts.close(),
  };
}

/**
 * The session's browser context and its one tab, navigated from page to
 * page. A tab per page cost Chromium about four times the CPU of rendering
 * the page (a context left without a tab tears its renderer down, and the
 * next tab starts one again: bench/render-tabs.ts). The context is the one
 * its campaign's sessions share on this worker (`contextKey`:
 * src/browser/shared-contexts.ts), or without a key the session's own, fresh
 * for every session; either is replaced after pagesPerContext pages or when
 * its browser died.
 */
class SessionContext {
  #context: BrowserContext | null = null;
  /** The hold on the shared context, with `contextKey`. */
  #lease: ContextLease | null = null;
  #tab: Page | null = null;
  /** The tab's DevTools session, which freezes it between pages; null until the first page is left, or when freezing failed once. */
  #cdp: CDPSession | null = null;
  /** The tab holds the page before, frozen: it is made active again before the next page's navigation. */
  #frozen = false;
  /** Freezing is not to be tried again on this tab (it failed): the tab goes blank between pages instead. */
  #noFreeze = false;
  /** The page the tab is rendering: every request of the tab goes to its routes, none once it is done. */
  #routes: PageRoutes | null = null;
  #pages = 0;

  constructor(private readonly o: BrowserFetcherOptions) {}

  /** The tab for the next page (made, with its context, when there is none, or replaced as its context is). */
  async tab(): Promise<{ context: BrowserContext; page: Page }> {
    // Replaced after pagesPerContext pages (its cache and memory grow), or when its browser died.
    const spent = this.#lease ? this.#lease.retired : this.#pages >= this.o.settings.pagesPerContext;
    if (this.#context && (spent || !this.#context.browser()?.isConnected())) await this.close();
    if (!this.#context) {
      if (this.o.contextKey !== undefined) {
        this.#lease = await this.o.pool.contexts.lease(this.o.contextKey, { userAgent: this.o.userAgent }, this.o.settings.pagesPerContext);
        this.#context = this.#lease.context;
      } else {
        const browser = await this.o.pool.browser();
        this.#context = await browser.newContext({ serviceWorkers: 'block', acceptDownloads: false, userAgent: this.o.userAgent });
      }
      this.#pages = 0;
    }
    this.#pages++;
    this.#lease?.pageStarted();
    if (this.#frozen && !(await this.thaw())) {
      const stuck = this.#tab;
      this.#tab = null;
      await stuck?.close().catch(() => undefined);
    }
    if (!this.#tab || this.#tab.isClosed()) {
      const page = await this.#context.newPage();
      // Pop-ups would be pages nobody waits for.
      page.on('popup', (popup) => void popup.close().catch(() => undefined));
      // Installed once for the tab: a request between two pages (a beacon of the page left) finds no routes and is
      // refused; a navigation is answered 204 as during a page (src/browser/page-routes.ts), since an aborted one
      // would put Chromium's error page in the tab and interrupt the next page's navigation.
      await page.route('**/*', (route) => {
        if (this.#routes) return this.#routes.handle(route);
        return (route.request().isNavigationRequest() ? route.fulfill({ status: 204, body: '' }) : route.abort('blockedbyclient')).catch(() => undefined);
      });
      this.#tab = page;
      this.#cdp = null;
      this.#frozen = false;
      this.#noFreeze = false;
    }
    return { context: this.#context, page: this.#tab };
  }

  /**
   * The page before is made active again for the next page's navigation to
   * replace it; until that page's document is served, its routes refuse any
   * other request (src/browser/page-requests.ts), so what the page before
   * sends as it wakes goes nowhere. False: it could not be woken (the next
   * page gets a new tab).
   */
  private async thaw(): Promise<boolean> {
    this.#frozen = false;
    const woken = await withTimeout(
      this.#cdp!.send('Page.setWebLifecycleState', { state: 'active' }).then(
        () => true,
        () => false,
      ),
      BLANK_TIMEOUT_MS,
    );
    return woken === true;
  }

  routeTo(routes: PageRoutes): void {
    this.#routes = routes;
  }

  /**
   * The page is done: its routes are taken away, and the tab is frozen
   * (Chromium's page lifecycle: its scripts, timers and loads stop) until the
   * next page, so that a page left behind costs no CPU while the session
   * waits for its host's clock. Freezing is one DevTools message; sending the
   * tab to a blank page, as before, was a navigation, 20 ms of Chromium's
   * CPU a page (bench/render-tabs.ts). A Chromium that cannot freeze the tab
   * sends it blank. A page that failed (crashed, hung) takes its tab with it.
   */
  async leave(clean: boolean): Promise<void> {
    this.#routes = null;
    const tab = this.#tab;
    if (!tab) return;
    if (clean && (await this.freeze(tab))) return;
    if (clean) {
      try {
        await tab.goto('about:blank', { timeout: BLANK_TIMEOUT_MS });
        return;
      } catch {
        /* a tab that cannot even go blank is closed below */
      }
    }
    this.#tab = null;
    await tab.close().catch(() => undefined);
  }

  private async freeze(tab: Page): Promise<boolean> {
    if (this.#noFreeze) return false;
    const frozen = await withTimeout(
      (async () => {
        this.#cdp ??= await tab.context().newCDPSession(tab);
        await this.#cdp.send('Page.setWebLifecycleState', { state: 'frozen' });
        return true;
      })().catch(() => false),
      BLANK_TIMEOUT_MS,
    );
    if (frozen) this.#frozen = true;
    else this.#noFreeze = true;
    return frozen === true;
  }

  /** Its context's browser died (crashed, killed): the next page makes a new context on a new browser. */
  browserGone(): boolean {
    return this.#context !== null && !this.#context.browser()?.isConnected();
  }

  async close(): Promise<void> {
    const c = this.#context;
    const tab = this.#tab;
    const lease = this.#lease;
    this.#context = null;
    this.#lease = null;
    this.#tab = null;
    this.#routes = null;
    this.#cdp = null;
    this.#frozen = false;
    if (!lease) return void (await c?.close().catch(() => undefined));
    // A shared context stays for the campaign's other sessions: only this session's tab goes.
    await tab?.close().catch(() => undefined);
    await lease.leave();
  }
}

/** Freezing, waking or going blank between two pages takes milliseconds; a tab that takes longer is closed, and the next page gets a new one. */
const BLANK_TIMEOUT_MS = 5_000;

/** The body's text as a reader sees it. A string: this package compiles without the DOM's types. */
const TEXT_SCRIPT = `document.body ? document.body.innerText.slice(0, ${MAX_TEXT_CHARS}) : ''`;

/** browser.text is extra, as a screenshot: a text that cannot be read or stored is logged and skipped, never the page's failure. */
async function takeText(p: Page, url: string, o: BrowserFetcherOptions, until: number): Promise<WarcPlace | null> {
  try {
    const text = await withTimeout(p.evaluate(TEXT_SCRIPT) as Promise<string>, Math.max(0, until - Date.now()));
    if (text === null) throw new Error('the page kept its thread busy');
    return await o.text!({ page: url, text, takenAt: new Date() });
  } catch (err) {
    o.log?.warn('page text skipped', { url, error: String(err).slice(0, 300) });
    return null;
  }
}

/** A string: this package compiles without the DOM's types. */
const SCROLL_TO_TOP = 'window.scrollTo(0, 0)';

/**
 * Screenshots are extra: one that fails or times out is logged and skipped,
 * never the page's failure. Taken and archived one at a time, so a page holds
 * one image at most. The view and the thumbnail show the top of the page (as
 * Browsertrix's, taken before its behaviors): scrolling and behaviors may
 * have left it scrolled down; its DOM and text are taken already.
 */
async function takeScreenshots(p: Page, url: string, o: BrowserFetcherOptions): Promise<void> {
  const shots: { kind: ScreenshotKind; contentType: string; take: () => Promise<Buffer> }[] = [
    {
      kind: 'view',
      contentType: 'image/png',
      take: async () => {
        // A page that keeps its thread busy is shot where it is.
        await withTimeout(p.evaluate(SCROLL_TO_TOP), SCREENSHOT_TIMEOUT_MS);
        return p.screenshot({ type: 'png', timeout: SCREENSHOT_TIMEOUT_MS, animations: 'disabled' });
      },
    },
    { kind: 'thumbnail', contentType: 'image/jpeg', take: () => thumbnail(p) },
    {
      kind: 'fullPage',
      contentType: 'image/png',
      take: () =>
        p.screenshot({
          fullPage: true,
          type: 'png',
          // Playwright trims the clip to the document: a short page is shot whole, a long one cut at SCREENSHOT_MAX_HEIGHT.
          clip: { x: 0, y: 0, width: SCREENSHOT_MAX_HEIGHT, height: SCREENSHOT_MAX_HEIGHT },
          timeout: SCREENSHOT_TIMEOUT_MS,
          animations: 'disabled',
        }),
    },
  ];
  for (const shot of shots) {
    try {
      const image = await shot.take();
      await o.screenshot!({ page: url, kind: shot.kind, image, contentType: shot.contentType, takenAt: new Date() });
    } catch (err) {
      o.log?.warn('screenshot skipped', { url, kind: shot.kind, error: String(err).slice(0, 300) });
    }
  }
}

/**
 * Browsertrix's thumbnail: the top 16:9 of the viewport as a JPEG 640 px
 * wide. Chromium scales it as it shoots (the DevTools clip's scale), so no
 * image is decoded here.
 */
async function thumbnail(p: Page): Promise<Buffer> {
  const size = p.viewportSize() ?? { width: 1280, height: 720 };
  const width = size.width;
  const height = Math.min(size.height, Math.round((width * 9) / 16));
  const cdp = await p.context().newCDPSession(p);
  try {
    const shot = cdp.send('Page.captureScreenshot', {
      format: 'jpeg',
      quality: THUMBNAIL_QUALITY,
      clip: { x: 0, y: 0, width, height, scale: THUMBNAIL_WIDTH / width },
    });
    const got = await withTimeout(shot, SCREENSHOT_TIMEOUT_MS);
    if (got === null) throw new Error(`thumbnail took longer than ${SCREENSHOT_TIMEOUT_MS} ms`);
    return Buffer.from(got.data, 'base64');
  } finally {
    await cdp.detach().catch(() => undefined);
  }
}

function failed(url: string, started: number, requests: number, code: string, message: string): RenderedDocument {
  return { html: null, url, done: 'failed', ms: Date.now() - started, requests, error: { code, message } };
}

/** The History API keeps a page on its origin; anything else is taken as the URL fetched. */
function sameOrigin(now: string, fetched: string): string {
  try {
    return new URL(now).origin === new URL(fetched).origin ? now : fetched;
  } catch {
    return fetched;
  }
}

async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
