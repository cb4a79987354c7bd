// Sitemap parsing per sitemaps.org: one fetched document in, the page URLs
// (urlset) or child sitemap URLs (sitemapindex) out.
//
// Pure module: no I/O. Sitemaps are hostile input as much as any page, so
// parseSitemap never throws on a bad body; problems end up in `errors` and
// whatever was parsed before them is kept.
//
// Decisions worth knowing:
// - gzip is recognised by its magic bytes (1f 8b) only. `.xml.gz` names and
//   `application/gzip` types lie in both directions (servers that already
//   applied Content-Encoding, or gzip served as text/xml).
// - Over-long bodies keep their prefix (truncated: 'bytes'): the spec caps a
//   sitemap at 50 MB uncompressed, and the first 50 MB of an oversized one
//   still lists real pages. For gzip, zlib's sync API discards everything
//   when maxOutputLength is exceeded, so we re-inflate ever shorter prefixes
//   of the compressed input (halving) until the output fits; the kept prefix
//   can therefore be shorter than the limit. Each attempt stops at the limit,
//   so a gzip bomb costs at most log2(compressed size) × limit of inflating.
//   A bomb of zeros then fails the binary sniff and comes back as 'invalid'.
// - Whatever was cut (our limit, or a gzip stream that ends early) may end
//   mid-URL, so the incomplete tail is dropped: an XML entry is kept only
//   once its </url> / </sitemap> has been seen, a text line only if a line
//   break follows it.
// - XML elements are matched by local name, ignoring prefixes and namespace
//   URIs (saxes runs without namespace processing, so an unbound prefix is
//   not even an error). Only <loc>/<lastmod>/<priority>/<changefreq> that are direct
//   children of a direct child of the root count, so extension elements such
//   as <image:image><image:loc> are never mistaken for page URLs.
// - The most common sitemap bug is an unescaped `&` in a query string. saxes
//   would read everything up to the next `;` as an entity name, losing the
//   rest of the document, so a bare `&` (one that does not start an entity
//   or character reference) is escaped before parsing and reported once.
//   Other well-formedness errors are reported and saxes keeps going; entries
//   are still validated one by one, so junk after an error is not trusted.
// - saxes never expands DTD entities, so entity bombs and XXE are moot.
// - <loc> values are trimmed and must be absolute http(s) URLs; nothing is
//   resolved or normalised here (the caller runs normalizeUrl and scope).
// - RSS/Atom feeds, which search engines also accept as sitemaps, are not
//   parsed: they come back as 'invalid' with the root element named.
import { gunzipSync, constants as zlibConstants } from 'node:zlib';
import { SaxesParser } from 'saxes';
import { decodeBody } from '../parse/decode';

/** sitemaps.org: at most 50 MB (52,428,800 bytes) uncompressed. */
export const DEFAULT_MAX_SITEMAP_BYTES = 50 * 1024 * 1024;
/** sitemaps.org: at most 50,000 URLs per sitemap (and sitemaps per index). */
export const DEFAULT_MAX_SITEMAP_URLS = 50_000;
/** Errors recorded per document; one more entry says how many were left out. */
export const MAX_SITEMAP_ERRORS = 100;

export type SitemapKind = 'urlset' | 'sitemapindex' | 'text' | 'invalid';

export interface SitemapUrl {
  loc: string;
  /** As written, when it looks like a W3C Datetime (lenient: space for T, no zone). */
  lastmod?: string;
  /** 0.0–1.0; out-of-range or non-numeric values are dropped. */
  priority?: number;
  /** One of sitemaps.org's seven values (lower-cased); others are dropped. Seeds a revisit interval (src/revisit/adapt.ts). */
  changefreq?: SitemapChangefreq;
}

export const SITEMAP_CHANGEFREQS = ['always', 'hourly', 'daily', 'weekly', 'monthly', 'yearly', 'never'] as const;
export type SitemapChangefreq = (typeof SITEMAP_CHANGEFREQS)[number];

export interface SitemapParseResult {
  kind: SitemapKind;
  /** Page URLs, for 'urlset' and 'text'. */
  urls: SitemapUrl[];
  /** Child sitemap URLs, for 'sitemapindex'. */
  sitemaps: string[];
  /** Why collecting stopped early: the byte limit or the URL-count limit. */
  truncated: false | 'bytes' | 'count';
  errors: string[];
}

export interface ParseSitemapOptions {
  /** The sitemap's own URL; used in error messages. */
  url: string;
  /** Only its charset parameter is used, and only for bodies that were not gzipped. */
  contentType?: string | null;
  /** Uncompressed bytes parsed (default DEFAULT_MAX_SITEMAP_BYTES). */
  maxUncompressedBytes?: number;
  /** Entries collected (default DEFAULT_MAX_SITEMAP_URLS). */
  maxUrls?: number;
  /**
   * The body was cut before it reached the parser (the fetch's size or time
   * limit): its last entry may be cut mid-URL, and it is reported truncated.
   */
  incomplete?: boolean;
}

export function parseSitemap(body: Uint8Array, opts: ParseSitemapOptions): SitemapParseResult {
  const maxBytes = Math.max(1, Math.floor(opts.maxUncompressedBytes ?? DEFAULT_MAX_SITEMAP_BYTES));
  const maxUrls = Math.max(0, Math.floor(opts.maxUrls ?? DEFAULT_MAX_SITEMAP_URLS));
  const out = new Collector(maxUrls);
  try {
    const gzipped = body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
    const raw = gzipped ? gunzipLimited(body, maxBytes, out) : cut(body, maxBytes, out);
    if (raw === null) return out.result('invalid');
    if (opts.incomplete && !out.truncated) out.truncated = 'bytes';
    const incomplete = out.truncated === 'bytes' || out.gzipTruncated;

    if (raw.length === 0) {
      out.error(`empty sitemap body (${opts.url})`);
      return out.result('invalid');
    }
    const { text } = decodeBody(raw, gzipped ? xmlCharset(raw) : contentTypeFor(raw, opts.contentType));
    const body0 = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    if (looksBinary(body0)) {
      out.error(`binary data, not a sitemap (${opts.url})`);
      return out.result('invalid');
    }
    const start = body0.search(/\S/);
    if (start === -1) {
      out.error(`empty sitemap body (${opts.url})`);
      return out.result('invalid');
    }
    if (body0[start] === '<') return parseXml(body0, incomplete, out);
    return parseText(body0, incomplete, out, opts.url);
  } catch (cause) {
    // Nothing above should throw; if something does, the URLs so far are
    // still worth more than an exception in the fetch activity.
    out.error(`internal error while parsing ${opts.url}: ${String(cause)}`);
    return out.result(out.kind ?? 'invalid');
  }
}

/**
 * Whether a sitemap at `sitemapUrl` may list `loc`: same scheme, host and
 * port. sitemaps.org also restricts a sitemap to URLs under its own
 * directory, but we do not enforce the path: sites routinely serve
 * /sitemaps/posts-1.xml or /wp-sitemap.xml listing pages across the whole
 * host, sitemaps found via robots.txt are exempt from the path rule anyway,
 * and major search engines ignore it. The host check is what stops one site
 * from injecting URLs for another. (A sitemap on another host that the
 * target's robots.txt points at may list the target's URLs too; that case
 * needs robots.txt context, which the caller has and this function does not.)
 */
export function sitemapMayList(sitemapUrl: string, loc: string): boolean {
  const a = httpOrigin(sitemapUrl);
  return a !== null && a === httpOrigin(loc);
}

// ---------------------------------------------------------------------------

const ABSOLUTE_HTTP = /^https?:\/\//i;
const W3C_DATETIME = /^\d{4}(-\d{2}(-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?)?)?$/;
// saxes is fed in slices so that hitting maxUrls stops the work early.
const XML_CHUNK_CHARS = 64 * 1024;
// Minimum compressed prefix worth inflating: the gzip header alone is 10 bytes.
const MIN_GZIP_PREFIX = 32;

class Collector {
  kind: SitemapKind | undefined;
  readonly urls: SitemapUrl[] = [];
  readonly sitemaps: string[] = [];
  truncated: false | 'bytes' | 'count' = false;
  gzipTruncated = false;
  private readonly errors: string[] = [];
  private omitted = 0;

  constructor(readonly maxUrls: number) {}

  error(msg: string): void {
    if (this.errors.length < MAX_SITEMAP_ERRORS) this.errors.push(msg);
    else this.omitted++;
  }

  /** False once the count limit is hit: the caller stops collecting. */
  room(): boolean {
    if (this.urls.length + this.sitemaps.length < this.maxUrls) return true;
    this.truncated = 'count';
    return false;
  }

  result(kind: SitemapKind): SitemapParseResult {
    const errors = this.omitted > 0 ? [...this.errors, `… ${this.omitted} more errors not shown`] : [...this.errors];
    return { kind, urls: this.urls, sitemaps: this.sitemaps, truncated: this.truncated, errors };
  }
}

function cut(body: Uint8Array, maxBytes: number, out: Collector): Uint8Array {
  if (body.length <= maxBytes) return body;
  out.truncated = 'bytes';
  return body.subarray(0, maxBytes);
}

function gunzipLimited(body: Uint8Array, maxBytes: number, out: Collector): Uint8Array | null {
  try {
    return gunzipSync(body, { maxOutputLength: maxBytes });
  } catch (err) {
    const code = errCode(err);
    if (code === 'Z_BUF_ERROR') {
      // Stream ends early (a cut-off download): keep what inflates.
      out.gzipTruncated = true;
      out.error(`gzip stream is truncated: ${errMessage(err)}`);
      try {
        return gunzipSync(body, { maxOutputLength: maxBytes, finishFlush: zlibConstants.Z_SYNC_FLUSH });
      } catch (err2) {
        if (errCode(err2) !== 'ERR_BUFFER_TOO_LARGE') return gzipFailed(err2, out);
      }
    } else if (code !== 'ERR_BUFFER_TOO_LARGE') {
      return gzipFailed(err, out);
    }
  }
  out.truncated = 'bytes';
  for (let len = body.length >> 1; len >= MIN_GZIP_PREFIX; len >>= 1) {
    try {
      return gunzipSync(body.subarray(0, len), {
        maxOutputLength: maxBytes,
        finishFlush: zlibConstants.Z_SYNC_FLUSH,
      });
    } catch (err) {
      if (errCode(err) !== 'ERR_BUFFER_TOO_LARGE') return gzipFailed(err, out);
    }
  }
  out.error(`gzip data expands beyond ${maxBytes} bytes even from its first ${MIN_GZIP_PREFIX} bytes`);
  return null;
}

function gzipFailed(err: unknown, out: Collector): null {
  out.error(`cannot gunzip sitemap: ${errMessage(err)}`);
  return null;
}

// The HTTP charset describes the bytes on the wire; when it is absent the XML
// declaration's encoding is the document's own statement. decodeBody gives a
// BOM precedence over both.
function contentTypeFor(raw: Uint8Array, contentType: string | null | undefined): string | null {
  if (contentType && /charset\s*=/i.test(contentType)) return contentType;
  return xmlCharset(raw) ?? contentType ?? null;
}

function xmlCharset(raw: Uint8Array): string | null {
  const head = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.length, 256)).toString('latin1');
  const m = /^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([\w.:-]+)["']/.exec(head);
  if (!m) return null;
  // This declaration was readable as ASCII, so the bytes are not UTF-16,
  // whatever it says (a real UTF-16 file starts with a BOM, which wins).
  return `application/xml; charset=${/^utf-?16/i.test(m[1]) ? 'utf-8' : m[1]}`;
}

// XML and text sitemaps are both text; NULs or a head full of control
// characters / undecodable bytes mean we were handed something else
// (an image, a zip, the zeros of a gzip bomb).
function looksBinary(text: string): boolean {
  const sample = text.length > 1024 ? text.slice(0, 1024) : text;
  let bad = 0;
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i);
    if (c === 0) return true;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) || c === 0xfffd) bad++;
  }
  return bad > sample.length / 10;
}

type Field = 'loc' | 'lastmod' | 'priority' | 'changefreq';

function parseXml(text: string, incomplete: boolean, out: Collector): SitemapParseResult {
  text = escapeBareAmpersands(text, out);
  const parser = new SaxesParser({ position: true });
  // Local names of the open elements; saxes emits a closetag for every
  // element it closes, even when recovering, so push/pop stay balanced.
  const stack: string[] = [];
  let stop = false;
  let entry: { loc?: string; lastmod?: string; priority?: string; changefreq?: string } | null = null;
  let field: Field | null = null;
  let buf = '';

  parser.on('error', (err) => {
    if (!stop) out.error(`XML: ${err.message}`);
  });
  parser.on('opentag', (tag) => {
    if (stop) return;
    const local = localName(tag.name);
    const depth = stack.length;
    stack.push(local);
    if (depth === 0) {
      if (local === 'urlset' || local === 'sitemapindex') out.kind = local;
      else {
        out.error(`root element is <${tag.name}>, not <urlset> or <sitemapindex>`);
        out.kind = 'invalid';
        stop = true;
      }
    } else if (depth === 1) {
      if ((out.kind === 'urlset' && local === 'url') || (out.kind === 'sitemapindex' && local === 'sitemap')) {
        entry = {};
      }
    } else if (depth === 2 && entry !== null && (local === 'loc' || local === 'lastmod' || local === 'priority' || local === 'changefreq')) {
      field = local;
      buf = '';
    }
  });
  const onText = (t: string): void => {
    if (!stop && field !== null && stack.length === 3) buf += t;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);
  parser.on('closetag', () => {
    if (stop) return;
    stack.pop();
    const depth = stack.length;
    if (depth === 2 && field !== null && entry !== null) {
      // The first occurrence wins; repeats are ignored.
      if (entry[field] === undefined) entry[field] = buf;
      field = null;
    } else if (depth === 1 && entry !== null) {
      const done = entry;
      entry = null;
      if (!commit(done, out)) stop = true;
    } else if (depth === 0) {
      stop = true; // root closed: anything after it is not part of the sitemap
    }
  });

  try {
    for (let i = 0; i < text.length && !stop; i += XML_CHUNK_CHARS) {
      parser.write(text.slice(i, i + XML_CHUNK_CHARS));
    }
    // An incomplete body would only add "unclosed tag" noise.
    if (!stop && !incomplete) parser.close();
  } catch (err) {
    out.error(`XML: ${errMessage(err)}`);
  }
  if (out.kind === undefined) {
    out.error('no root element');
    return out.result('invalid');
  }
  return out.result(out.kind);
}

// CDATA sections are matched first and left alone: a `&` there is literal.
const BARE_AMP = /<!\[CDATA\[[\s\S]*?(?:\]\]>|$)|&(?!(?:#[0-9]+|#x[0-9A-Fa-f]+|[A-Za-z_:][\w.:-]*);)/g;

function escapeBareAmpersands(text: string, out: Collector): string {
  if (!text.includes('&')) return text;
  let count = 0;
  const fixed = text.replace(BARE_AMP, (m) => {
    if (m !== '&') return m;
    count++;
    return '&amp;';
  });
  if (count > 0) out.error(`XML: ${count} unescaped "&" read as "&amp;"`);
  return fixed;
}

/** Validates and stores one <url>/<sitemap>; false when the count limit is reached. */
function commit(e: { loc?: string; lastmod?: string; priority?: string; changefreq?: string }, out: Collector): boolean {
  const tag = out.kind === 'sitemapindex' ? 'sitemap' : 'url';
  if (e.loc === undefined) {
    out.error(`<${tag}> without <loc>`);
    return true;
  }
  const loc = e.loc.trim();
  if (!isAbsoluteHttp(loc)) {
    out.error(`<loc> is not an absolute http(s) URL: ${short(loc)}`);
    return true;
  }
  if (!out.room()) return false;
  if (out.kind === 'sitemapindex') {
    out.sitemaps.push(loc);
    return true;
  }
  const u: SitemapUrl = { loc };
  if (e.lastmod !== undefined) {
    const lastmod = e.lastmod.trim();
    if (W3C_DATETIME.test(lastmod)) u.lastmod = lastmod;
    else out.error(`ignored <lastmod> "${short(lastmod)}" of ${short(loc)}: not a W3C datetime`);
  }
  if (e.priority !== undefined) {
    const p = e.priority.trim();
    const n = p === '' ? NaN : Number(p);
    if (n >= 0 && n <= 1) u.priority = n;
    else out.error(`ignored <priority> "${short(p)}" of ${short(loc)}: not a number from 0.0 to 1.0`);
  }
  if (e.changefreq !== undefined) {
    const f = e.changefreq.trim().toLowerCase();
    if ((SITEMAP_CHANGEFREQS as readonly string[]).includes(f)) u.changefreq = f as SitemapChangefreq;
    else out.error(`ignored <changefreq> "${short(f)}" of ${short(loc)}: not one of ${SITEMAP_CHANGEFREQS.join(', ')}`);
  }
  out.urls.push(u);
  return true;
}

// sitemaps.org text format: one absolute URL per line, nothing else.
function parseText(text: string, incomplete: boolean, out: Collector, url: string): SitemapParseResult {
  let line = 0;
  let pos = 0;
  while (pos < text.length) {
    line++;
    let end = pos;
    while (end < text.length && text.charCodeAt(end) !== 0x0a && text.charCodeAt(end) !== 0x0d) end++;
    // A last line with no line break after it may have been cut mid-URL.
    if (end === text.length && incomplete) break;
    const s = text.slice(pos, end).trim();
    pos = end + (text.charCodeAt(end) === 0x0d && text.charCodeAt(end + 1) === 0x0a ? 2 : 1);
    if (s === '') continue;
    if (!isAbsoluteHttp(s)) {
      out.error(`line ${line}: not an absolute http(s) URL: ${short(s)}`);
      continue;
    }
    if (!out.room()) break;
    out.urls.push({ loc: s });
  }
  if (out.urls.length === 0) {
    out.error(`neither XML nor a text sitemap: no line is an absolute http(s) URL (${url})`);
    return out.result('invalid');
  }
  return out.result('text');
}

function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon === -1 ? name : name.slice(colon + 1);
}

function isAbsoluteHttp(s: string): boolean {
  // The prefix test rejects "http:foo", which the URL parser would accept.
  if (!ABSOLUTE_HTTP.test(s)) return false;
  try {
    return new URL(s).hostname !== '';
  } catch {
    return false;
  }
}

function httpOrigin(s: string): string | null {
  try {
    const u = new URL(s);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
    // `example.com.` names the same host as `example.com` (see normalize.ts).
    const host = u.hostname.endsWith('.') ? u.hostname.slice(0, -1) : u.hostname;
    return `${u.protocol}//${host}${u.port === '' ? '' : `:${u.port}`}`;
  } catch {
    return null;
  }
}

function errCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : undefined;
}

function errMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

// Sitemap text is untrusted; keep error entries short.
function short(s: string): string {
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
