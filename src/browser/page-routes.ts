// The routes of one rendered page (docs/rendering.md, "How it works"): every
// request Chromium makes is decided here (src/browser/page-requests.ts) and,
// when allowed, answered from the crawler's own HTTP client, each exchange
// handed to the WARC before the browser gets it. The document is answered
// from the response already fetched (the page is requested once). Requests
// to the page's host go out at most SAME_HOST_AT_ONCE at a time (the session
// holds the host's clock); a request to another host waits for that host's
// turn (its robots.txt and clock, `PageNetwork.otherHosts`), or is refused
// when the turn would come after the page's deadline. Shared files come from
// the session's SessionCache, or from a capture earlier in the campaign
// (`PageNetwork.captures`), before the network.
import type { Page, Request, Route } from 'playwright-core';
import type { Logger } from '../log/logger';
import type { FetchResult, HttpMethod } from '../http/http-types';
import type { Fetcher, FetchOutcome } from '../http/fetcher';
import type { InFlight } from './page-done';
import { forwardedHeaders, fulfilHeaders, MAX_REQUEST_BODY_BYTES, redirected, routeDecision, type OutgoingRequest, type RouteDecision } from './page-requests';

export { fulfilHeaders, routeDecision, type PageRequest, type RouteDecision } from './page-requests';

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

/** Whether a request is for a file pages share (answered from the session or an earlier capture): a GET of a script, stylesheet, image, font or media. */
export function isSharedResource(resourceType: string, method: string): boolean {
  return method === 'GET' && SHARED_TYPES.has(resourceType);
}

/** What the browser gets for a request. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** A turn on another host's clock, taken for one request: `done` gives it back (`sent`: a request went out, so the host's delay counts from now). */
export interface HostTurn {
  done(sent: boolean): Promise<void>;
}

/** What a rendered page may reach besides its own host, and what it may be answered from (wired by activities/render.ts). */
export interface PageNetwork {
  /**
   * A turn for one request to `host` (not the page's): that host's
   * robots.txt allows `url` and its clock gave this request its slot. Null
   * refuses the request: disallowed, the host paused or refused, or its turn
   * not before `deadlineAt`. Without it, requests to other hosts are refused.
   */
  otherHosts?: { turn(url: string, host: string, deadlineAt: number, signal: AbortSignal): Promise<HostTurn | null> };
  /** A shared file captured earlier in the campaign (another session, another page's host), read back from its WARC; null: not captured, or not readable here. */
  captures?: { find(url: string): Promise<Answer | null> };
  /** scope.exclude: true refuses the URL. */
  excluded?(url: string): boolean;
}

/** What the routes need of the browser fetcher's options (src/browser/browser-fetcher.ts: BrowserFetcherOptions has it all). */
export interface RouteOptions {
  /** The campaign's HTTP fetcher (with its cookie jar). */
  inner: Fetcher;
  /** The page's host (hostKey form): its requests go out under the session's clock. */
  host: string;
  /** robots.txt of the page's host, null when not respected. */
  allowedByRobots: ((url: string) => boolean) | null;
  /** Archives one exchange of the page (WARC records), before the browser gets the answer. */
  record(capture: { url: string; resourceType: string; response: FetchResult; page: string }): Promise<void>;
  settings: { pageTimeoutMs: number };
  /** fetch.maxRedirects: redirects of a request followed here, each hop archived. */
  maxRedirects: number;
  network?: PageNetwork;
  log?: Logger;
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
  readonly #entries = new Map<string, Answer>();
  #bytes = 0;

  get(url: string): Answer | undefined {
    return this.#entries.get(url);
  }

  /** A whole 200 fetched now. */
  remember(url: string, res: FetchResult): void {
    if (res.status !== 200 || res.truncated) return;
    this.keep(url, { status: res.status, headers: res.headers, body: res.body });
  }

  /** An answer already known to be whole (a capture read back). */
  keep(url: string, a: Answer): void {
    if (this.#entries.has(url) || this.#entries.size >= SESSION_CACHE_ENTRIES || this.#bytes + a.body.length > SESSION_CACHE_BYTES) return;
    this.#entries.set(url, a);
    this.#bytes += a.body.length;
  }
}

type Fetch = Extract<RouteDecision, { kind: 'fetch' }>;

/** One page's routes: what each request of it becomes, and the requests answered from the network (each archived). */
export class PageRoutes {
  /** Requests of the page answered from the network (the document not included). */
  requests = 0;
  /** Epoch ms: when the last request of the page to its own host (one that may have gone out) ended; 0 before any. */
  ownHostEndedAt = 0;
  #documentServed = false;
  readonly #gate = new Gate(SAME_HOST_AT_ONCE);
  readonly #pending = new Set<Promise<unknown>>();

  constructor(
    private readonly o: RouteOptions,
    private readonly page: Page,
    /** The page's document, as fetched. */
    private readonly doc: FetchResult,
    /** The page's URL (what its captures name as `via`). */
    private readonly url: string,
    private readonly inflight: InFlight,
    private readonly cache: SessionCache,
    /** Aborted when the page is done: its requests still in flight end. */
    private readonly stop: AbortSignal,
    /** The page's deadline (epoch ms): a turn on another host's clock later than this refuses the request. */
    private readonly deadlineAt = Date.now() + o.settings.pageTimeoutMs,
  ) {}

  /** Answers one request of the page (the session's tab routes every request to the page it is rendering: src/browser/browser-fetcher.ts). */
  handle(route: Route): Promise<unknown> {
    const handled = this.answer(route).catch((err: unknown) => {
      this.o.log?.debug('route failed', { url: route.request().url(), error: String(err).slice(0, 300) });
      return route.abort('failed').catch(() => undefined);
    });
    this.#pending.add(handled);
    void handled.finally(() => this.#pending.delete(handled));
    return handled;
  }

  /** Waits for the routes still answering (after the page is done and `stop` aborted). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
  }

  async answer(route: Route): Promise<void> {
    const req = route.request();
    const d = this.decide(req.url(), req.method(), req.resourceType(), req.isNavigationRequest() && frameOf(req) === this.page.mainFrame());
    if (d.kind === 'document') {
      this.#documentServed = true;
      return route.fulfill({ status: this.doc.status, headers: fulfilHeaders(this.doc.headers), body: this.doc.body });
    }
    // A navigation away is answered 204 No Content, on which a browser stays on the page it has (an aborted one would show
    // Chromium's error page in its place): a script that sets location.href, reloads in a loop or navigates to a download keeps its DOM.
    if (d.kind === 'refuse') {
      if (d.why === 'navigation') return route.fulfill({ status: 204, body: '' });
      this.o.log?.debug('page request refused', { page: this.url, url: req.url().slice(0, 500), method: req.method(), why: d.why });
      return route.abort('blockedbyclient');
    }
    this.inflight.begin();
    try {
      const got = await this.respond(req, d);
      if (!got) return await route.abort('failed');
      await route.fulfill({ status: got.status, headers: fulfilHeaders(got.headers), body: got.body });
    } finally {
      this.inflight.end();
    }
  }

  private decide(url: string, method: string, resourceType: string, mainFrameNavigation: boolean): RouteDecision {
    const { o } = this;
    return routeDecision(
      { url, method, resourceType, mainFrameNavigation },
      {
        host: o.host,
        allowedByRobots: o.allowedByRobots,
        documentServed: this.#documentServed,
        documentUrl: this.url,
        otherHosts: o.network?.otherHosts !== undefined,
        excluded: o.network?.excluded,
      },
    );
  }

  /** The answer to one request: from the session, from an earlier capture, or fetched (null: refused or failed). */
  private async respond(req: Request, d: Fetch): Promise<Answer | null> {
    const url = req.url();
    const method = req.method() as HttpMethod;
    const shared = isSharedResource(req.resourceType(), method);
    if (shared) {
      const hit = this.cache.get(url) ?? (await this.fromCapture(url));
      if (hit) return hit;
    }
    const body = method === 'POST' ? (req.postDataBuffer() ?? Buffer.alloc(0)) : undefined;
    if (body && body.length > MAX_REQUEST_BODY_BYTES) {
      this.o.log?.debug('page request refused', { page: this.url, url: url.slice(0, 500), method, why: 'body-too-large', bytes: body.length });
      return null;
    }
    const res = await this.fetchFollowing({ url, method, headers: forwardedHeaders(req.headers()), ...(body ? { body } : {}) }, req.resourceType(), d);
    if (res && shared) this.cache.remember(url, res);
    return res;
  }

  private async fromCapture(url: string): Promise<Answer | null> {
    const captures = this.o.network?.captures;
    if (!captures) return null;
    try {
      const a = await captures.find(url);
      if (a) this.cache.keep(url, a);
      return a;
    } catch (err) {
      // The capture is a shortcut: reading it failing is a fetch, not the page's failure.
      this.o.log?.debug('capture not read', { url: url.slice(0, 500), error: String(err).slice(0, 300) });
      return null;
    }
  }

  /** A request of the page's through the HTTP client, redirects followed here (each hop archived, in its own host's turn). */
  async fetchFollowing(first: OutgoingRequest, resourceType: string, d: Fetch): Promise<FetchResult | null> {
    let current = first;
    let decision = d;
    for (let hop = 0; ; hop++) {
      const res = await this.fetchOnce(current, resourceType, decision);
      const to = res?.stoppedRedirect?.to;
      if (!res || !to) return res;
      // Chromium would follow a redirect by itself, past the routes: the hops are taken here, or not at all.
      const next = redirected(current, res.status, to);
      const nextDecision = this.decide(next.url, next.method, resourceType, false);
      if (nextDecision.kind !== 'fetch' || hop >= this.o.maxRedirects) return null;
      current = next;
      decision = nextDecision;
    }
  }

  /** One request, in its host's turn; archived once answered. */
  private async fetchOnce(r: OutgoingRequest, resourceType: string, d: Fetch): Promise<FetchResult | null> {
    const turn = await this.turn(r.url, d);
    if (!turn) return null;
    let sent = false;
    let got: FetchOutcome | null;
    try {
      if (this.stop.aborted) return null;
      sent = true;
      got = await this.o.inner.fetch({ url: r.url, method: r.method, headers: r.headers, ...(r.body ? { body: r.body } : {}) }, { signal: this.stop }).catch(() => null); // the page is done, or the session cancelled
    } finally {
      if (sent && d.sameHost) this.ownHostEndedAt = Date.now();
      await turn.done(sent);
    }
    if (!got?.ok) return null;
    this.requests++;
    await this.o.record({ url: r.url, resourceType, response: got.response, page: this.url });
    return got.response;
  }

  /** The page's own host: a place among SAME_HOST_AT_ONCE (the session holds its clock). Another host: its turn. */
  private async turn(url: string, d: Fetch): Promise<HostTurn | null> {
    if (d.sameHost) {
      const leave = await this.#gate.enter();
      return { done: async () => leave() };
    }
    const other = this.o.network?.otherHosts;
    if (!other || this.stop.aborted) return null;
    const turn = await other.turn(url, d.host, this.deadlineAt, this.stop).catch((err: unknown) => {
      if (!this.stop.aborted) this.o.log?.warn('no turn on another host', { url: url.slice(0, 500), error: String(err).slice(0, 300) });
      return null;
    });
    if (!turn) this.o.log?.debug('page request refused', { page: this.url, url: url.slice(0, 500), why: 'other-host-turn' });
    return turn;
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
