// The handler API: what users write to run their own code on every page
// (docs/handlers.md). Types only, so a handler module can
// `import type { Handler } from '<this package>/src/handlers/api'` without
// loading anything of the crawler.
import type { CheerioAPI } from 'cheerio';

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

export interface Handler {
  /** The hook of pages without a label, and of labels without a route. */
  onPage?: PageHook;
  /** Hooks by label (Crawlee's router): a page enqueued with label L runs routes[L]. */
  routes?: Record<string, PageHook>;
  /**
   * Called for each link the page itself has (not for the hook's `links`):
   * false drops it. It can only narrow the crawl; the crawler's own rules
   * still apply to what it keeps.
   */
  filterLink?: (url: string, ctx: PageContext) => boolean;
}

/** Identity for a handler's type checking: `export default defineHandler({ … })`. */
export function defineHandler<T extends Handler>(h: T): T {
  return h;
}
