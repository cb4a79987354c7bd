// The handler API: what users write to run their own code on every page
// (docs/handlers.md). Types only, so a handler module can
// `import type { Handler } from '<this package>/src/handlers/api'` without
// loading anything of the crawler.
import type { CheerioAPI } from 'cheerio';
import type { Page } from 'playwright-core';

/** A label routes a page to one hook: 1–64 characters of letters, digits, `.`, `_`, `:`, `-`. */
export const LABEL_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** What a hook may log; lines go to the worker's JSON log with the campaign and URL attached. */
export interface HandlerLog {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** One fetched page, as a hook sees it. */
export interface PageContext {
  /** The frontier entry's URL (normalised). */
  readonly url: string;
  /** The URL the response came from (the same: redirects are their own entries). */
  readonly finalUrl: string;
  /** Link hops from a seed; seeds are 0. */
  readonly depth: number;
  /** The label the page was enqueued with, or null (the default route). */
  readonly label: string | null;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly contentType: string | null;
  /** The body as stored in the WARC (possibly truncated at fetch.maxBodyBytes). */
  readonly body: Buffer;
  /** The body decoded (BOM, Content-Type charset, <meta charset>, else UTF-8). */
  readonly text: string;
  /** The page parsed by cheerio, loaded on first use. */
  readonly $: CheerioAPI;
  readonly log: HandlerLog;
}

/** A link a hook adds: a URL (absolute, or relative to the page), optionally with the label its page is routed to. */
export type HandlerLink = string | { url: string; label?: string | null };

/** Any JSON-serialisable object: one line of the campaign's dataset. */
export type DatasetItem = Record<string, unknown>;

export interface PageResult {
  /** Dataset items of this page, written once per page in the sealed dataset. */
  items?: DatasetItem[];
  /** Links to enqueue, through the same scope, depth, trap, robots, address and politeness rules as the page's own links. */
  links?: HandlerLink[];
  /** true: the page's own links are not followed (only `links`). */
  skipDefaultLinks?: boolean;
}

export type PageHook = (ctx: PageContext) => PageResult | void | Promise<PageResult | void>;

/**
 * A page in the browser, as `onRender` sees it (`render: browser` or `auto`,
 * docs/handlers.md): called once the page is done (load, quiet, idle; after
 * the scrolling of browser.scroll and the behaviors: browser.scrollBoxes,
 * expand, autoclick, autoplay) and before its DOM is taken, within the
 * page's deadline. What its clicks and scrolling load is routed through the
 * crawler's HTTP client and archived like the page's own requests, and ends
 * up in the DOM whose links the crawl follows and onPage reads.
 */
export interface RenderContext {
  /** Playwright's page: click, scroll, wait, read. Navigating it elsewhere is refused (links are followed by the crawl, not the page). */
  readonly page: Page;
  /** The frontier entry's URL (normalised). */
  readonly url: string;
  /** The label the page was enqueued with, or null (the default route). */
  readonly label: string | null;
  /** Link hops from a seed; seeds are 0. */
  readonly depth: number;
  readonly log: HandlerLog;
}

/** What onRender may return: as onPage's result, merged with it (its items and links first, skipDefaultLinks if either says so). */
export type RenderResult = PageResult;

export type RenderHook = (ctx: RenderContext) => RenderResult | void | Promise<RenderResult | void>;

/** What a login request may say besides its URL. */
export interface LoginRequestInit {
  /** Default GET. */
  method?: 'GET' | 'POST';
  /** A POST's body: URLSearchParams is sent as a form (application/x-www-form-urlencoded), a string as it is (set its Content-Type in `headers`). */
  body?: string | URLSearchParams;
  /** Extra request headers (Content-Type, Accept, a CSRF header…); the crawler's own (Host, User-Agent, framing) cannot be replaced. */
  headers?: Record<string, string>;
}

/** The answer to a login request, after the redirects on the host were followed. */
export interface LoginResponse {
  readonly status: number;
  /** Lower-cased names; Set-Cookie headers are joined with '\n' (the crawler keeps the cookies itself). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body, decoded like a page's. */
  readonly text: string;
  /** The URL that answered (after redirects). */
  readonly url: string;
}

/** What the login hook gets (docs/handlers.md, "Logging in"). */
export interface LoginContext {
  /** The host logged in to (`host[:port]`), as the crawler names it. */
  readonly host: string;
  /** scheme://host[:port] of the page that needs the login. */
  readonly origin: string;
  /** `first`: before the host's first request; `logged-out`: a page answered 401, or 403 and isLoggedOut said so. */
  readonly reason: 'first' | 'logged-out';
  /**
   * A request to the host, through its cookie jar, proxy, credentials and
   * politeness clock (each request waits the host's delay, one at a time),
   * robots.txt and the address policy; stored in the WARC like a page.
   * Redirects on the host are followed (a POST answered 301/302/303 goes on
   * as a GET). Throws (a CrawlerError with a code) when the request gets no
   * answer, leaves the host, or goes past the login's limits.
   */
  fetch(url: string, init?: LoginRequestInit): Promise<LoginResponse>;
  readonly log: HandlerLog;
  /** The credentials file's `login user:password` line for `origin`, or null: the way to give the hook its secret without the campaign input. */
  readonly credentials: { readonly user: string; readonly password: string } | null;
}

export type LoginHook = (ctx: LoginContext) => void | Promise<void>;

export interface Handler {
  /** The hook of pages without a label, and of labels without a route. */
  onPage?: PageHook;
  /** Hooks by label (Crawlee's router): a page enqueued with label L runs routes[L]. */
  routes?: Record<string, PageHook>;
  /**
   * Rendered pages only (`render: browser`, and the pages `render: auto`
   * renders): runs in the browser with Playwright's `page`, before the DOM
   * is taken, once (not attempted again), within browser.pageTimeoutMs and
   * handlerTimeoutMs. onPage still runs afterwards on the rendered `$`.
   * The hook of pages without a label, and of labels without a renderRoute.
   */
  onRender?: RenderHook;
  /** Render hooks by label, as `routes` for onPage: a rendered page enqueued with label L runs renderRoutes[L], else onRender. */
  renderRoutes?: Record<string, RenderHook>;
  /**
   * Called for each link the page itself has (not for the hook's `links`):
   * false drops it. It can only narrow the crawl; the crawler's own rules
   * still apply to what it keeps.
   */
  filterLink?: (url: string, ctx: PageContext) => boolean;
  /**
   * Logs in to a host: runs before the host's first request, and again when
   * a page answers 401, or 403 and `isLoggedOut` says so (the page is then
   * requested once more). Resolving means logged in; throwing means the
   * login failed. The cookies it gets are the crawl's from then on.
   */
  login?: LoginHook;
  /** Given a 403 page: true when it says the crawler is not logged in (a login form, "please log in"). Needs `login`. */
  isLoggedOut?: (page: PageContext) => boolean;
}

/** Identity for a handler's type checking: `export default defineHandler({ … })`. */
export function defineHandler<T extends Handler>(h: T): T {
  return h;
}
