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
// for browser.quietMs, and at browser.pageTimeoutMs at the latest (what it
// loaded by then is what it has). Its requests to its own host go out at
// most SAME_HOST_AT_ONCE at a time; requests to other hosts, other methods
// than GET, WebSockets and event streams are refused in this first version
// (the rendered DOM's requisites on other hosts are still fetched as embeds,
// under their own hosts' clocks and robots.txt).
import type { BrowserContext, Page, Request, Route } from 'playwright-core';
import type { Logger } from '../log/logger';
import type { FetchResult, RenderedDocument } from '../http/http-client';
import type { Fetcher, FetchOutcome } from '../http/fetcher';
import { isHtml } from '../parse/decode';
import { hostKey } from '../url/normalize';
import type { BrowserPool } from './browser-pool';

/** A page's requests to its own host in flight at once: a browser opens six connections a host; a crawler asks less of a site. */
export const SAME_HOST_AT_ONCE = 4;
/**
 * Files the pages of one session share (a site's script, stylesheet, logo)
 * are fetched and archived once per session and then answered from memory:
 * with routes on, Chromium's own cache is off. Bounded in entries and bytes.
 */
const SHARED_TYPES = new Set(['script', 'stylesheet', 'image', 'font', 'media']);
const SESSION_CACHE_ENTRIES = 500;
const SESSION_CACHE_BYTES = 32 * 1024 * 1024;
/** Taking the DOM of a page whose script keeps its thread busy must not hang the session past its deadline by more than this. */
const CONTENT_GRACE_MS = 5_000;
/**
 * browser.screenshot: a full-page PNG is cut at this height (Chromium's
 * own texture limit; an endless feed would otherwise make an image of
 * hundreds of megabytes), and given at most this long, after the DOM is taken.
 */
export const SCREENSHOT_MAX_HEIGHT = 16_384;
const SCREENSHOT_TIMEOUT_MS = 10_000;

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
  /** Take a full-page screenshot of each rendered page and hand it to `screenshot` (default off). */
  screenshot?: boolean;
}

/** A rendered page's full-page screenshot: what the WARC gets as a resource record. */
export interface ScreenshotCapture {
  /** The page's URL (as fetched). */
  page: string;
  png: Buffer;
  takenAt: Date;
}

export interface BrowserFetcherOptions {
  pool: BrowserPool;
  /** The campaign's HTTP fetcher (with its cookie jar): the document and every request of the page go through it. */
  inner: Fetcher;
  /** The session's host (hostKey form): the only host the page's requests may go to. */
  host: string;
  /** robots.txt of the host, null when not respected. */
  allowedByRobots: ((url: string) => boolean) | null;
  /** Archives one exchange of a page (WARC records), before the browser gets the answer. */
  record(capture: SubresourceCapture): Promise<void>;
  /** Archives a rendered page's screenshot (called only with settings.screenshot on). */
  screenshot?(capture: ScreenshotCapture): Promise<void>;
  settings: RenderSettings;
  userAgent: string;
  /** fetch.maxRedirects: redirects of a subresource followed here, each hop archived. */
  maxRedirects: number;
  log?: Logger;
}

export interface RenderingFetcher extends Fetcher {
  /** Renders a page already fetched (`render: auto` decides which: src/browser/adaptive-fetcher.ts). */
  render(doc: FetchResult, url: string, signal: AbortSignal): Promise<RenderedDocument>;
  /** Closes the session's browser context. */
  close(): Promise<void>;
}

/** Whether a fetched response is a page to render: a 2xx HTML page entry (redirects, errors, sitemaps and embeds are not). */
export function shouldRender(kind: string | undefined, res: FetchResult): boolean {
  return kind === 'page' && res.status >= 200 && res.status < 300 && !res.stoppedRedirect && isHtml(res.headers['content-type']) && res.body.length > 0;
}

/** What a request of the page is, as the route sees it. */
export interface PageRequest {
  url: string;
  method: string;
  resourceType: string;
  /** A navigation of the page's main frame (the document, or the page going elsewhere). */
  mainFrameNavigation: boolean;
}

export type RouteDecision = { kind: 'document' } | { kind: 'fetch' } | { kind: 'refuse'; why: 'navigation' | 'method' | 'stream' | 'scheme' | 'other-host' | 'robots' };

/**
 * What becomes of one request of a page. The main frame's first navigation
 * is the document (answered from the response already fetched); any later
 * one would leave the page, and is refused (links are followed by the
 * frontier, under the host clock, not by the page). WebSockets and event
 * streams never end and are not archived; POST and the like are refused
 * (this version archives GET exchanges only).
 */
export function routeDecision(r: PageRequest, o: { host: string; allowedByRobots: ((url: string) => boolean) | null; documentServed: boolean }): RouteDecision {
  if (r.mainFrameNavigation) return o.documentServed ? { kind: 'refuse', why: 'navigation' } : { kind: 'document' };
  if (r.resourceType === 'websocket' || r.resourceType === 'eventsource') return { kind: 'refuse', why: 'stream' };
  if (r.method !== 'GET') return { kind: 'refuse', why: 'method' };
  if (!/^https?:/i.test(r.url)) return { kind: 'refuse', why: 'scheme' };
  let host: string;
  try {
    host = hostKey(r.url);
  } catch {
    return { kind: 'refuse', why: 'scheme' };
  }
  if (host !== o.host) return { kind: 'refuse', why: 'other-host' };
  if (o.allowedByRobots && !o.allowedByRobots(r.url)) return { kind: 'refuse', why: 'robots' };
  return { kind: 'fetch' };
}

/** Response headers for the browser: the body it gets is decoded and whole, so no encoding or framing headers of the original. */
export function fulfilHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (k === 'content-encoding' || k === 'content-length' || k === 'transfer-encoding' || k === 'connection' || k === 'keep-alive' || k.startsWith(':')) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Requests of a page in flight, and when it went quiet: `settled` resolves
 * `quiet` once none has been in flight for `quietMs`, or `deadline` at
 * `deadlineAt` (epoch ms), whichever comes first.
 */
export class InFlight {
  #count = 0;
  #quietSince = Date.now();
  #changed: (() => void) | null = null;

  begin(): void {
    this.#count++;
    this.#changed?.();
  }

  end(): void {
    this.#count--;
    if (this.#count === 0) this.#quietSince = Date.now();
    this.#changed?.();
  }

  get count(): number {
    return this.#count;
  }

  async settled(quietMs: number, deadlineAt: number): Promise<'quiet' | 'deadline'> {
    for (;;) {
      const t = Date.now();
      if (this.#count === 0 && t - this.#quietSince >= quietMs) return 'quiet';
      if (t >= deadlineAt) return 'deadline';
      const until = this.#count === 0 ? Math.min(this.#quietSince + quietMs, deadlineAt) : deadlineAt;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(1, until - t));
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.#changed = done;
      });
      this.#changed = null;
    }
  }
}

/** At most `n` at once; the others wait in order. */
class Gate {
  #free: number;
  #queue: (() => void)[] = [];
  constructor(n: number) {
    this.#free = n;
  }
  async enter(): Promise<() => void> {
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#queue.push(resolve));
    return () => {
      const next = this.#queue.shift();
      if (next) next();
      else this.#free++;
    };
  }
}

export function browserFetcher(o: BrowserFetcherOptions): RenderingFetcher {
  const contexts = new SessionContext(o);
  const cache = new SessionCache();

  async function render(doc: FetchResult, url: string, signal: AbortSignal): Promise<RenderedDocument> {
    const started = Date.now();
    const deadlineAt = started + o.settings.pageTimeoutMs;
    const release = await o.pool.turn(o.settings.maxPagesAtOnce, signal);
    // Ends the page's requests still in flight when it is done (or the session is cancelled).
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const inflight = new InFlight();
    const gate = new Gate(SAME_HOST_AT_ONCE);
    const pending = new Set<Promise<unknown>>();
    let requests = 0;
    let page: Page | undefined;
    try {
      page = await (await contexts.forPage()).newPage();
      const p = page;
      let documentServed = false;
      // Pop-ups would be pages nobody waits for.
      p.on('popup', (popup) => void popup.close().catch(() => undefined));
      await p.route('**/*', (route) => {
        const handled = answer(
          route,
          p,
          () => documentServed,
          () => (documentServed = true),
        ).catch((err: unknown) => {
          o.log?.debug('route failed', { url: route.request().url(), error: String(err).slice(0, 300) });
          return route.abort('failed').catch(() => undefined);
        });
        pending.add(handled);
        void handled.finally(() => pending.delete(handled));
        return handled;
      });

      async function answer(route: Route, pg: Page, served: () => boolean, serve: () => void): Promise<void> {
        const req = route.request();
        const d = routeDecision(
          { url: req.url(), method: req.method(), resourceType: req.resourceType(), mainFrameNavigation: req.isNavigationRequest() && frameOf(req) === pg.mainFrame() },
          { host: o.host, allowedByRobots: o.allowedByRobots, documentServed: served() },
        );
        if (d.kind === 'document') {
          serve();
          return route.fulfill({ status: doc.status, headers: fulfilHeaders(doc.headers), body: doc.body });
        }
        if (d.kind === 'refuse') return route.abort('blockedbyclient');
        inflight.begin();
        try {
          const shared = SHARED_TYPES.has(req.resourceType()) ? cache.get(req.url()) : undefined;
          if (shared) return await route.fulfill({ status: shared.status, headers: fulfilHeaders(shared.headers), body: shared.body });
          const leave = await gate.enter();
          let res: FetchResult | null;
          try {
            res = stop.signal.aborted ? null : await fetchFollowing(req.url(), req.resourceType(), req.headers().accept);
          } finally {
            leave();
          }
          if (!res) return await route.abort('failed');
          if (SHARED_TYPES.has(req.resourceType())) cache.remember(req.url(), res);
          await route.fulfill({ status: res.status, headers: fulfilHeaders(res.headers), body: res.body });
        } finally {
          inflight.end();
        }
      }

      /** A GET of the page's through the HTTP client, redirects followed here (each hop archived), on the page's host only. */
      async function fetchFollowing(first: string, resourceType: string, accept: string | undefined): Promise<FetchResult | null> {
        let current = first;
        for (let hop = 0; ; hop++) {
          let got: FetchOutcome;
          try {
            got = await o.inner.fetch({ url: current, kind: 'subresource', ...(accept ? { headers: { accept } } : {}) }, { signal: stop.signal });
          } catch {
            return null; // the page is done, or the session cancelled
          }
          if (!got.ok) return null;
          requests++;
          const res = got.response;
          await o.record({ url: current, resourceType, response: res, page: url });
          const to = res.stoppedRedirect?.to;
          if (!to) return res;
          // Chromium would follow a redirect by itself, past the routes: the hops are taken here, or not at all.
          const next = routeDecision(
            { url: to, method: 'GET', resourceType, mainFrameNavigation: false },
            { host: o.host, allowedByRobots: o.allowedByRobots, documentServed: true },
          );
          if (next.kind !== 'fetch' || hop >= o.maxRedirects) return null;
          current = to;
        }
      }

      let done: RenderedDocument['done'] = 'quiet';
      try {
        await p.goto(url, { waitUntil: 'load', timeout: Math.max(1, deadlineAt - Date.now()) });
      } catch (err) {
        if (!(err instanceof Error && err.name === 'TimeoutError')) throw err;
        done = 'deadline';
      }
      if (done === 'quiet') done = await inflight.settled(o.settings.quietMs, deadlineAt);
      const html = await withTimeout(p.content(), Math.max(0, deadlineAt - Date.now()) + CONTENT_GRACE_MS);
      if (html === null)
        return failed(url, started, requests, 'RENDER_TIMEOUT', `the page kept its thread busy past browser.pageTimeoutMs (${o.settings.pageTimeoutMs} ms): no DOM taken`);
      if (o.settings.screenshot && o.screenshot) await takeScreenshot(p, url, o);
      return { html, url: sameOrigin(p.url(), url), done, ms: Date.now() - started, requests };
    } catch (err) {
      if (signal.aborted) throw err;
      o.log?.warn('render failed', { url, error: String(err).slice(0, 500) });
      return failed(url, started, requests, 'RENDER_FAILED', err instanceof Error ? err.message.split('\n')[0]!.slice(0, 500) : String(err).slice(0, 500));
    } finally {
      stop.abort();
      signal.removeEventListener('abort', onAbort);
      await page?.close().catch(() => undefined);
      await Promise.allSettled([...pending]);
      release();
    }
  }

  return {
    async fetch(request, ctx) {
      const got = await o.inner.fetch(request, ctx);
      if (!got.ok || !shouldRender(request.kind, got.response)) return got;
      const rendered = await render(got.response, request.url, ctx.signal);
      return { ok: true, response: { ...got.response, rendered } };
    },
    render,
    close: () => contexts.close(),
  };
}

/** The host session's own browser context: fresh for every session, replaced after pagesPerContext pages or when its browser died. */
class SessionContext {
  #context: BrowserContext | null = null;
  #pages = 0;

  constructor(private readonly o: BrowserFetcherOptions) {}

  async forPage(): Promise<BrowserContext> {
    // Replaced after pagesPerContext pages (its cache and memory grow), or when its browser died.
    if (this.#context && (this.#pages >= this.o.settings.pagesPerContext || !this.#context.browser()?.isConnected())) await this.close();
    if (!this.#context) {
      const browser = await this.o.pool.browser();
      this.#context = await browser.newContext({ serviceWorkers: 'block', acceptDownloads: false, userAgent: this.o.userAgent });
      this.#pages = 0;
    }
    this.#pages++;
    return this.#context;
  }

  async close(): Promise<void> {
    const c = this.#context;
    this.#context = null;
    await c?.close().catch(() => undefined);
  }
}

/** The session's shared files (scripts, stylesheets, images…) served again from memory, bounded in entries and bytes. */
class SessionCache {
  readonly #entries = new Map<string, FetchResult>();
  #bytes = 0;

  get(url: string): FetchResult | undefined {
    return this.#entries.get(url);
  }

  remember(url: string, res: FetchResult): void {
    if (res.status !== 200 || res.truncated || this.#entries.size >= SESSION_CACHE_ENTRIES || this.#bytes + res.body.length > SESSION_CACHE_BYTES) return;
    this.#entries.set(url, res);
    this.#bytes += res.body.length;
  }
}

/** A screenshot is extra: one that fails or times out is logged and skipped, never the page's failure. */
async function takeScreenshot(p: Page, url: string, o: BrowserFetcherOptions): Promise<void> {
  try {
    const png = await p.screenshot({
      fullPage: true,
      type: 'png',
      // Playwright trims the clip to the document: a short page is shot whole, a long one cut at SCREENSHOT_MAX_HEIGHT.
      clip: { x: 0, y: 0, width: SCREENSHOT_MAX_HEIGHT, height: SCREENSHOT_MAX_HEIGHT },
      timeout: SCREENSHOT_TIMEOUT_MS,
      animations: 'disabled',
    });
    await o.screenshot!({ page: url, png, takenAt: new Date() });
  } catch (err) {
    o.log?.warn('screenshot skipped', { url, error: String(err).slice(0, 300) });
  }
}

function failed(url: string, started: number, requests: number, code: string, message: string): RenderedDocument {
  return { html: null, url, done: 'failed', ms: Date.now() - started, requests, error: { code, message } };
}

/** A service worker's request has no frame (blocked anyway). */
function frameOf(req: Request) {
  try {
    return req.frame();
  } catch {
    return null;
  }
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
