// What a rendered page's requests may be (docs/rendering.md, "How it works"),
// as pure rules: which request is answered how, which of the browser's
// request headers go on to the site, and what the browser gets back as
// headers. src/browser/page-routes.ts applies them.
import { hostKey } from '../url/normalize';

/**
 * Methods a page's requests may use: reads, and POST, which scripts use to
 * read too (search forms, GraphQL, APIs that take their query as a body).
 * PUT, PATCH, DELETE and the like change the site: a crawler does not send
 * them, whatever the page's script asks.
 */
export const PAGE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST']);
/** A request body (POST) larger than this is refused: a page's query is small; an upload is not the crawler's to send. */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

/** What a request of the page is, as the route sees it. */
export interface PageRequest {
  url: string;
  method: string;
  resourceType: string;
  /** A navigation of the page's main frame (the document, or the page going elsewhere). */
  mainFrameNavigation: boolean;
}

export type RefusedWhy = 'navigation' | 'previous-page' | 'method' | 'stream' | 'scheme' | 'other-host' | 'robots' | 'excluded';

export type RouteDecision =
  | { kind: 'document' }
  /** Fetched by the crawler: `host` (hostKey form) is the page's own (`sameHost`) or another one, which needs that host's turn. */
  | { kind: 'fetch'; host: string; sameHost: boolean }
  | { kind: 'refuse'; why: RefusedWhy };

export interface RouteRules {
  /** The page's host (hostKey form). */
  host: string;
  /** robots.txt of the page's host, null when not respected (other hosts' robots.txt is their turn's business). */
  allowedByRobots: ((url: string) => boolean) | null;
  documentServed: boolean;
  /**
   * The page's URL: only a navigation there is answered with the document.
   * A navigation of the page before (its scripts navigating while the tab went
   * blank) can still reach the routes once they are this page's; served the
   * document, it would use it up, and the tab's own navigation would find it
   * served and stay blank.
   */
  documentUrl: string;
  /** Requests to other hosts may be fetched (in their hosts' turns); false refuses them. */
  otherHosts: boolean;
  /** The campaign's scope.exclude: true refuses the URL. */
  excluded?: (url: string) => boolean;
}

/**
 * What becomes of one request of a page. The main frame's first navigation
 * to the page's URL is the document (answered from the response already
 * fetched); any other would leave the page (or is the page before's), and is
 * refused (links are followed by the frontier, under the host clock, not by
 * the page), as is any request before the document (the page before's). WebSockets and event
 * streams never end and are not archived; methods other than PAGE_METHODS
 * are refused. Requests to other hosts are fetched like the page's own
 * requisites on other hosts (out of scope allowed, scope.exclude not), each
 * in that host's turn (its robots.txt and clock).
 */
export function routeDecision(r: PageRequest, o: RouteRules): RouteDecision {
  if (r.mainFrameNavigation) return !o.documentServed && sameDocument(r.url, o.documentUrl) ? { kind: 'document' } : { kind: 'refuse', why: 'navigation' };
  // Nothing of a page is asked for before its document: what comes first is the page before's, which the tab held frozen
  // until this page's navigation (src/browser/browser-fetcher.ts) and which wakes for a moment before it is replaced.
  if (!o.documentServed) return { kind: 'refuse', why: 'previous-page' };
  if (r.resourceType === 'websocket' || r.resourceType === 'eventsource') return { kind: 'refuse', why: 'stream' };
  if (!PAGE_METHODS.has(r.method)) return { kind: 'refuse', why: 'method' };
  if (!/^https?:/i.test(r.url)) return { kind: 'refuse', why: 'scheme' };
  let host: string;
  try {
    host = hostKey(r.url);
  } catch {
    return { kind: 'refuse', why: 'scheme' };
  }
  if (o.excluded?.(r.url)) return { kind: 'refuse', why: 'excluded' };
  if (host !== o.host) return o.otherHosts ? { kind: 'fetch', host, sameHost: false } : { kind: 'refuse', why: 'other-host' };
  if (o.allowedByRobots && !o.allowedByRobots(r.url)) return { kind: 'refuse', why: 'robots' };
  return { kind: 'fetch', host, sameHost: true };
}

/**
 * Two URLs of one document: equal once parsed, fragments aside (the browser
 * sends none), and percent-encoding aside (Chromium may escape a character
 * the URL parser leaves, or the other way round).
 */
function sameDocument(a: string, b: string): boolean {
  const plain = (s: string): string | null => {
    try {
      const u = new URL(s);
      u.hash = '';
      try {
        return decodeURI(u.href);
      } catch {
        return u.href;
      }
    } catch {
      return null;
    }
  };
  const x = plain(a);
  return x !== null && x === plain(b);
}

/** Response headers for the browser: the body it gets is decoded and whole, so no encoding or framing headers of the original. */
export function fulfilHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  // Set-Cookie stays one value with its lines joined by '\n': Playwright splits it back into one header per line for Chromium.
  for (const [k, v] of Object.entries(headers)) {
    if (k === 'content-encoding' || k === 'content-length' || k === 'transfer-encoding' || k === 'connection' || k === 'keep-alive' || k.startsWith(':')) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Request headers of the browser's that are not passed on: what the HTTP
 * client owns (framing, connection, Host, User-Agent, Accept-Encoding: it
 * decodes only what it asks for), the campaign's own (Accept-Language,
 * cookies: the campaign's jar sends them, so the browser's copy would be a
 * second, stale one), and what would make the answer partial or empty:
 * Range (a 206 is never stored as the whole file: the file is fetched whole,
 * docs/rendering.md) and the conditional headers (the archive needs the
 * body, not a 304).
 */
const NOT_FORWARDED: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'user-agent',
  'accept-encoding',
  'accept-language',
  'cookie',
  'cookie2',
  'range',
  'if-range',
  'if-none-match',
  'if-modified-since',
  'if-match',
  'if-unmodified-since',
]);

/**
 * The browser's request headers the site gets (names lower-cased): what a
 * script set (Content-Type of a POST, X-Requested-With, a token), Accept,
 * Referer and Origin (a server answers a cross-origin request by its
 * Origin), less NOT_FORWARDED and HTTP/2 pseudo-headers.
 */
export function forwardedHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const k = name.toLowerCase();
    if (k.startsWith(':') || NOT_FORWARDED.has(k)) continue;
    out[k] = value;
  }
  return out;
}

/** A request of the page as the crawler sends it. */
export interface OutgoingRequest {
  url: string;
  method: 'GET' | 'HEAD' | 'POST';
  headers: Record<string, string>;
  body?: Buffer;
}

/**
 * The request a redirect leads to, as browsers make it (RFC 9110 15.4): a
 * POST answered 301, 302 or 303 goes on as a GET without its body (and its
 * Content-Type); 307 and 308 keep method and body. A HEAD stays a HEAD.
 */
export function redirected(r: OutgoingRequest, status: number, to: string): OutgoingRequest {
  if (r.method !== 'POST' || status === 307 || status === 308) return { ...r, url: to };
  const headers = Object.fromEntries(Object.entries(r.headers).filter(([n]) => n !== 'content-type'));
  return { url: to, method: 'GET', headers };
}
