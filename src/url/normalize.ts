// URL normalisation: one canonical string per crawlable resource, so that the
// frontier's seen-set and fingerprints do not treat trivial spelling variants
// (`HTTP://Example.com:80/a/../b#x`) as different pages.
//
// Built on the WHATWG `URL` class because it is the standard parser that
// browsers and Node's fetch use: it already lower-cases scheme and host,
// converts IDNs to punycode, canonicalises IPv4 forms, removes default ports,
// resolves dot segments and percent-encodes characters that must be encoded.
// Re-implementing any of that would only introduce disagreements with the
// HTTP client that later fetches the URL. Our own rules are layered on top and
// never undo what the parser did, which keeps normalisation idempotent.
import { UrlError, type UrlErrorCode } from './url-error';

export interface NormalizeOptions {
  /** Remove known click/campaign tracking parameters (default true). */
  stripTracking?: boolean;
  /** Stable-sort query parameters by key (default true). */
  sortQuery?: boolean;
  /** Longest accepted normalised URL, in characters (default 2048). */
  maxLength?: number;
}

export const DEFAULT_MAX_URL_LENGTH = 2048;

export interface NormalizationRule {
  readonly id: string;
  /** 'whatwg' rules come from the URL parser itself; 'crawler' rules are ours. */
  readonly source: 'whatwg' | 'crawler';
  readonly description: string;
  /** Executable example: the unit tests assert it, the docs print it. */
  readonly example: {
    readonly input: string;
    readonly base?: string;
    readonly opts?: NormalizeOptions;
    readonly output?: string;
    readonly error?: UrlErrorCode;
  };
}

export const NORMALIZATION_RULES: readonly NormalizationRule[] = [
  {
    id: 'non-empty',
    source: 'crawler',
    description: 'Input that is empty or only whitespace is rejected with EMPTY.',
    example: { input: '   ', error: 'EMPTY' },
  },
  {
    id: 'resolve-relative',
    source: 'whatwg',
    description: 'Relative references are resolved against the base URL (the page or its <base href>).',
    example: { input: '../b?x=1', base: 'http://example.com/a/c', output: 'http://example.com/b?x=1' },
  },
  {
    id: 'http-only',
    source: 'crawler',
    description: 'Only http: and https: URLs are crawlable; any other scheme is rejected with UNSUPPORTED_SCHEME.',
    example: { input: 'mailto:someone@example.com', error: 'UNSUPPORTED_SCHEME' },
  },
  {
    id: 'lowercase-scheme-host',
    source: 'whatwg',
    description: 'Scheme and host are lower-cased; the path and query keep their case.',
    example: { input: 'HTTP://Example.COM/Path', output: 'http://example.com/Path' },
  },
  {
    id: 'idn-punycode',
    source: 'whatwg',
    description: 'Internationalised host names are converted to punycode (UTS #46).',
    example: { input: 'http://BÜcher.example/', output: 'http://xn--bcher-kva.example/' },
  },
  {
    id: 'ip-address',
    source: 'whatwg',
    description: 'IPv4 addresses in hex/octal/short forms become dotted decimal; IPv6 is compressed.',
    example: { input: 'http://0x7f.1/', output: 'http://127.0.0.1/' },
  },
  {
    id: 'trailing-dot-host',
    source: 'crawler',
    description: 'A single trailing dot on the host (fully-qualified form) is removed: it names the same DNS host.',
    example: { input: 'http://example.com./a', output: 'http://example.com/a' },
  },
  {
    id: 'default-port',
    source: 'whatwg',
    description: 'The default port (80 for http, 443 for https) is removed; other ports are kept.',
    example: { input: 'https://example.com:443/', output: 'https://example.com/' },
  },
  {
    id: 'drop-userinfo',
    source: 'crawler',
    description: 'user:password@ is removed: credentials must never reach the frontier, logs or WARC metadata, and the crawler does not authenticate from links.',
    example: { input: 'http://user:secret@example.com/', output: 'http://example.com/' },
  },
  {
    id: 'empty-path',
    source: 'whatwg',
    description: 'An empty path becomes "/".',
    example: { input: 'http://example.com', output: 'http://example.com/' },
  },
  {
    id: 'dot-segments',
    source: 'whatwg',
    description: '"." and ".." path segments (also as %2e) are resolved and "\\" is treated as "/".',
    example: { input: 'http://example.com/a/./b/../c', output: 'http://example.com/a/c' },
  },
  {
    id: 'encode-unsafe',
    source: 'whatwg',
    description: 'Spaces, quotes, angle brackets and non-ASCII characters in path and query are UTF-8 percent-encoded.',
    example: { input: 'http://example.com/a b?q=é', output: 'http://example.com/a%20b?q=%C3%A9' },
  },
  {
    id: 'percent-encoding',
    source: 'crawler',
    description:
      'Percent-escapes use upper-case hex, and escapes of unreserved characters (A-Z a-z 0-9 - . _ ~) are decoded. Reserved escapes such as %2F stay encoded because decoding them changes meaning.',
    example: { input: 'http://example.com/%7euser/a%2fb?q=%e2%82%ac', output: 'http://example.com/~user/a%2Fb?q=%E2%82%AC' },
  },
  {
    id: 'drop-fragment',
    source: 'crawler',
    description: 'The #fragment is removed: it is never sent to the server, so it cannot select a different resource.',
    example: { input: 'http://example.com/a#section-2', output: 'http://example.com/a' },
  },
  {
    id: 'strip-tracking',
    source: 'crawler',
    description:
      'Known click/campaign tracking parameters (utm_*, gclid, fbclid, msclkid, …, see TRACKING_PARAMS) are removed, matched case-insensitively. Option stripTracking, default on.',
    example: { input: 'http://example.com/p?utm_source=news&id=7&fbclid=abc', output: 'http://example.com/p?id=7' },
  },
  {
    id: 'strip-session-ids',
    source: 'crawler',
    description:
      'Session identifiers are removed: `;jsessionid=…` path parameters (any case; other `;name=value` parameters stay), and the query parameters jsessionid, phpsessid, sessionid, aspsessionid* and cfid/cftoken (names compared case-insensitively), plus `sid` when its value looks like a token (16+ hex or base64url characters), since `sid` is also an ordinary name. They give every visitor a different URL for one document. Part of stripTracking.',
    example: { input: 'http://example.com/item;JSESSIONID=A9E9C325;v=2?id=2&sid=f1492414397a5e28&PHPSESSID=09d6', output: 'http://example.com/item;v=2?id=2' },
  },
  {
    id: 'sort-query',
    source: 'crawler',
    description:
      'Query parameters are stable-sorted by key (code-unit order); parameters sharing a key keep their relative order because servers may read them as an ordered list. Option sortQuery, default on.',
    example: { input: 'http://example.com/?b=2&a=1&b=1', output: 'http://example.com/?a=1&b=2&b=1' },
  },
  {
    id: 'empty-query',
    source: 'crawler',
    description: 'A lone trailing "?" and empty "&&" segments are dropped; "+" and "a" vs "a=" are left as written.',
    example: { input: 'http://example.com/a?', output: 'http://example.com/a' },
  },
  {
    id: 'max-length',
    source: 'crawler',
    description: 'Normalised URLs longer than maxLength (default 2048) are rejected with URL_TOO_LONG; such URLs are almost always crawler traps or session junk.',
    example: { input: 'http://example.com/a-rather-long-path', opts: { maxLength: 30 }, error: 'URL_TOO_LONG' },
  },
];

/**
 * Query keys removed by `strip-tracking` (compared lower-cased, after
 * percent-decoding). Only parameters that identify a click or campaign are
 * listed: removing one must never change which document the server returns.
 */
export const TRACKING_PARAMS: ReadonlySet<string> = new Set([
  // Google Ads / Analytics
  'gclid',
  'gclsrc',
  'dclid',
  'gbraid',
  'wbraid',
  '_ga',
  '_gl',
  'srsltid',
  // Social and ad networks
  'fbclid',
  'msclkid',
  'yclid',
  'twclid',
  'ttclid',
  'li_fat_id',
  'igshid',
  'rb_clid',
  // Email marketing (Mailchimp, HubSpot, Marketo, Vero, Olytics)
  'mc_cid',
  'mc_eid',
  '_hsenc',
  '_hsmi',
  '__hstc',
  '__hssc',
  '__hsfp',
  'hsctatracking',
  'mkt_tok',
  'vero_id',
  'vero_conv',
  'oly_anon_id',
  'oly_enc_id',
]);

/** Prefixes of tracking keys; `utm_` covers utm_source, utm_medium, utm_id, … */
export const TRACKING_PARAM_PREFIXES: readonly string[] = ['utm_'];

/** Query keys that carry a session, not a document (compared lower-cased). */
export const SESSION_PARAMS: ReadonlySet<string> = new Set(['jsessionid', 'phpsessid', 'sessionid', 'cfid', 'cftoken']);
// `sid` is also an ordinary word ("station id"): only token-looking values go.
const SID_TOKEN = /^[0-9a-z_-]{16,}$/i;
// Java servlet containers put the session in a path parameter, before the query.
// Only that parameter goes: the value ends at the next `;`, so other matrix
// parameters of the segment (`;v=2`), which may select content, stay.
const JSESSIONID_PATH_PARAM = /;jsessionid=[^/;?#]*/gi;

function isSessionParam(key: string, param: string): boolean {
  const k = key.toLowerCase();
  if (SESSION_PARAMS.has(k) || k.startsWith('aspsessionid')) return true;
  if (k !== 'sid') return false;
  const eq = param.indexOf('=');
  return eq !== -1 && SID_TOKEN.test(param.slice(eq + 1));
}

export function isTrackingParam(key: string): boolean {
  const k = key.toLowerCase();
  if (TRACKING_PARAMS.has(k)) return true;
  return TRACKING_PARAM_PREFIXES.some((p) => k.startsWith(p));
}

/**
 * Normalise `input` (optionally relative to `base`) into the crawler's
 * canonical URL string. Throws `UrlError` when the result is not crawlable.
 */
export function normalizeUrl(input: string, base?: string, opts: NormalizeOptions = {}): string {
  const stripTracking = opts.stripTracking ?? true;
  const sortQuery = opts.sortQuery ?? true;
  const maxLength = opts.maxLength ?? DEFAULT_MAX_URL_LENGTH;

  if (typeof input !== 'string' || input.trim() === '') {
    throw new UrlError('EMPTY', String(input ?? ''), 'URL is empty');
  }

  // Cheap scheme sniff before parsing, so that multi-megabyte `data:` hrefs
  // are rejected for what they are without running the parser over them.
  // Anything irregular (e.g. a tab inside the scheme) falls through to the
  // parser, which decides authoritatively below.
  const sniffed = SCHEME_SNIFF.exec(input.length > 64 ? input.slice(0, 64) : input);
  if (sniffed) checkScheme(sniffed[1].toLowerCase() + ':', input);

  // Percent-decoding shrinks a URL at most threefold, so only tracking
  // parameters could save an input this far over the limit; refusing it
  // early bounds the work done on hostile pages.
  if (input.length > maxLength * 16) {
    throw new UrlError('URL_TOO_LONG', input, `URL is ${input.length} characters, limit is ${maxLength}`);
  }

  let url: URL;
  try {
    url = base === undefined ? new URL(input) : new URL(input, base);
  } catch (cause) {
    const where = base === undefined ? '' : ` (base ${short(base)})`;
    throw new UrlError('INVALID_URL', input, `Cannot parse URL ${short(input)}${where}`, { cause });
  }
  checkScheme(url.protocol, input);

  let hostname = url.hostname;
  if (hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  if (hostname === '') throw new UrlError('INVALID_URL', input, `URL has no host: ${short(input)}`);
  const host = url.port === '' ? hostname : `${hostname}:${url.port}`;

  let path = normalizePercent(url.pathname) || '/';
  if (stripTracking) path = path.replace(JSESSIONID_PATH_PARAM, '') || '/';
  const query = normalizeQuery(url.search, stripTracking, sortQuery);

  // Built by hand rather than via `url.href` so that userinfo and fragment
  // are dropped and the query is exactly what normalizeQuery produced.
  const out = `${url.protocol}//${host}${path}${query === '' ? '' : `?${query}`}`;
  if (out.length > maxLength) {
    throw new UrlError('URL_TOO_LONG', input, `Normalised URL is ${out.length} characters, limit is ${maxLength}`);
  }
  return out;
}

/**
 * Politeness key of an already-normalised URL: `URL.host`, i.e. hostname
 * plus any non-default port, because rate limits and robots.txt apply per
 * origin authority rather than per registrable domain.
 */
export function hostKey(url: string): string {
  try {
    return new URL(url).host;
  } catch (cause) {
    throw new UrlError('INVALID_URL', url, `Cannot parse URL ${short(url)}`, { cause });
  }
}

// C0 controls and space before a scheme are stripped by the WHATWG parser, so they are skipped here too.
// eslint-disable-next-line no-control-regex
const SCHEME_SNIFF = /^[\x00-\x20]*([A-Za-z][A-Za-z0-9+.-]*):/;
const PERCENT_ESCAPE = /%([0-9A-Fa-f]{2})/g;

function checkScheme(protocol: string, input: string): void {
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new UrlError('UNSUPPORTED_SCHEME', input, `Unsupported scheme "${protocol}" in ${short(input)}`);
  }
}

function isUnreserved(c: number): boolean {
  return (
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x30 && c <= 0x39) || // 0-9
    c === 0x2d || // -
    c === 0x2e || // .
    c === 0x5f || // _
    c === 0x7e // ~
  );
}

function normalizePercent(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(PERCENT_ESCAPE, (_m, hex: string) => {
    const c = parseInt(hex, 16);
    return isUnreserved(c) ? String.fromCharCode(c) : `%${hex.toUpperCase()}`;
  });
}

// Works on the raw query string instead of URLSearchParams, whose
// form-urlencoded serialiser would rewrite "%20" as "+" and escape "/" and
// ":" — changes some servers do not treat as equivalent.
function normalizeQuery(search: string, stripTracking: boolean, sortQuery: boolean): string {
  if (search.length <= 1) return '';
  let params = normalizePercent(search.slice(1))
    .split('&')
    .filter((p) => p !== '');
  if (stripTracking) params = params.filter((p) => !isTrackingParam(decodeKey(p)) && !isSessionParam(decodeKey(p), p));
  if (sortQuery && params.length > 1) {
    const keyed = params.map((p) => ({ p, k: rawKey(p) }));
    // Array.prototype.sort is stable (ES2019), so duplicate keys keep order.
    keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
    params = keyed.map((e) => e.p);
  }
  return params.join('&');
}

function rawKey(param: string): string {
  const eq = param.indexOf('=');
  return eq === -1 ? param : param.slice(0, eq);
}

function decodeKey(param: string): string {
  const key = rawKey(param).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(key);
  } catch {
    return key; // malformed escapes: compare as written
  }
}

function short(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
