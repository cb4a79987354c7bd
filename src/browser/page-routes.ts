// The routes of one rendered page (docs/rendering.md, "How it works"): every
// request Chromium makes is decided here and, when allowed, answered from the
// crawler's own HTTP client, each exchange handed to the WARC before the
// browser gets it. The document is answered from the response already
// fetched (the page is requested once). Requests to the page's host go out
// at most SAME_HOST_AT_ONCE at a time; the session's shared files come from
// its SessionCache.
import type { Page, Request, Route } from 'playwright-core';
import type { FetchResult } from '../http/http-client';
import type { FetchOutcome } from '../http/fetcher';
import { hostKey } from '../url/normalize';
import type { BrowserFetcherOptions } from './browser-fetcher';
import type { InFlight } from './page-done';

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

/** The session's shared files (scripts, stylesheets, images…) served again from memory, bounded in entries and bytes. */
export class SessionCache {
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

/** One page's routes: what each request of it becomes, and the requests answered from the network (each archived). */
export class PageRoutes {
  /** Requests of the page answered from the network (the document not included). */
  requests = 0;
  #documentServed = false;
  readonly #gate = new Gate(SAME_HOST_AT_ONCE);
  readonly #pending = new Set<Promise<unknown>>();

  constructor(
    private readonly o: BrowserFetcherOptions,
    private readonly page: Page,
    /** The page's document, as fetched. */
    private readonly doc: FetchResult,
    /** The page's URL (what its captures name as `via`). */
    private readonly url: string,
    private readonly inflight: InFlight,
    private readonly cache: SessionCache,
    /** Aborted when the page is done: its requests still in flight end. */
    private readonly stop: AbortSignal,
  ) {}

  /** Routes every request of the page here. */
  async install(): Promise<void> {
    await this.page.route('**/*', (route) => {
      const handled = this.answer(route).catch((err: unknown) => {
        this.o.log?.debug('route failed', { url: route.request().url(), error: String(err).slice(0, 300) });
        return route.abort('failed').catch(() => undefined);
      });
      this.#pending.add(handled);
      void handled.finally(() => this.#pending.delete(handled));
      return handled;
    });
  }

  /** Waits for the routes still answering (after the page is done and `stop` aborted). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  async answer(route: Route): Promise<void> {
    const { o, doc, inflight, cache } = this;
    const req = route.request();
    const d = routeDecision(
      { url: req.url(), method: req.method(), resourceType: req.resourceType(), mainFrameNavigation: req.isNavigationRequest() && frameOf(req) === this.page.mainFrame() },
      { host: o.host, allowedByRobots: o.allowedByRobots, documentServed: this.#documentServed },
    );
    if (d.kind === 'document') {
      this.#documentServed = true;
      return route.fulfill({ status: doc.status, headers: fulfilHeaders(doc.headers), body: doc.body });
    }
    // A navigation away is answered 204 No Content, on which a browser stays on the page it has (an aborted one would show
    // Chromium's error page in its place): a script that sets location.href, reloads in a loop or navigates to a download keeps its DOM.
    if (d.kind === 'refuse') return d.why === 'navigation' ? route.fulfill({ status: 204, body: '' }) : route.abort('blockedbyclient');
    inflight.begin();
    try {
      const shared = SHARED_TYPES.has(req.resourceType()) ? cache.get(req.url()) : undefined;
      if (shared) return await route.fulfill({ status: shared.status, headers: fulfilHeaders(shared.headers), body: shared.body });
      const leave = await this.#gate.enter();
      let res: FetchResult | null;
      try {
        res = this.stop.aborted ? null : await this.fetchFollowing(req.url(), req.resourceType(), req.headers().accept);
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
  async fetchFollowing(first: string, resourceType: string, accept: string | undefined): Promise<FetchResult | null> {
    const o = this.o;
    let current = first;
    for (let hop = 0; ; hop++) {
      let got: FetchOutcome;
      try {
        got = await o.inner.fetch({ url: current, kind: 'subresource', ...(accept ? { headers: { accept } } : {}) }, { signal: this.stop });
      } catch {
        return null; // the page is done, or the session cancelled
      }
      if (!got.ok) return null;
      this.requests++;
      const res = got.response;
      await o.record({ url: current, resourceType, response: res, page: this.url });
      const to = res.stoppedRedirect?.to;
      if (!to) return res;
      // Chromium would follow a redirect by itself, past the routes: the hops are taken here, or not at all.
      const next = routeDecision({ url: to, method: 'GET', resourceType, mainFrameNavigation: false }, { host: o.host, allowedByRobots: o.allowedByRobots, documentServed: true });
      if (next.kind !== 'fetch' || hop >= o.maxRedirects) return null;
      current = to;
    }
  }
}

/** A service worker's request has no frame (blocked anyway). */
function frameOf(req: Request) {
  try {
    return req.frame();
  } catch {
    return null;
  }
}
