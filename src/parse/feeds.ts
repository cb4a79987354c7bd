// Item links of RSS, Atom and JSON Feed documents (issue 24): news sites list
// their new articles there first, so continuous crawls follow feeds as they
// follow sitemaps.
//
// Pure module, no I/O; hostile input as much as any page, so parseFeed never
// throws: a body that is not a feed comes back as kind 'invalid' with why.
//
// Decisions worth knowing:
// - What a document is, is decided by its content, not its Content-Type
//   (feeds are served as text/xml, application/xml, text/plain…): the root
//   element (rss, feed, rdf:RDF) or, for JSON, a `version` starting with
//   https://jsonfeed.org/version/.
// - XML is read by htmlparser2's Tokenizer in XML mode, never a tree (its
//   Parser keeps its stack with Array#unshift, quadratic in the nesting): the
//   few nestings that matter (rss > channel > item > link, feed > entry >
//   link) are tracked on a stack of names that stops growing past
//   MAX_TRACKED_DEPTH. DTDs and entities other than XML's own are never
//   expanded, so entity bombs and XXE are moot.
// - JSON is read by a small linear scanner rather than JSON.parse, which
//   would build the whole 50 MB document as objects; the scanner keeps only
//   the item under way, and the items completed before a cut or an error.
// - An item counts once its end is seen (</item>, </entry>'s <link>, an
//   item's closing "}"), so a body cut at the byte limit never yields a URL
//   cut in the middle.
// - Links are resolved against the feed's URL (Atom's xml:base respected)
//   and normalised like page links (normalizeUrl's default options), since
//   they are pages to crawl, not resources to replay.
import { Tokenizer, type TokenizerCallbacks as Callbacks } from 'htmlparser2';
import { mediaTypeOf } from '../http/media-type';
import { normalizeUrl } from '../url/normalize';
import { CrawlerError } from '../errors';
import { UrlError } from '../url/url-error';
import { decodeBody } from './decode';

/** Item links collected per feed: feeds list tens of items; a feed of more is cut. */
export const DEFAULT_MAX_FEED_LINKS = 10_000;
/** Bytes of a feed read, as for sitemaps (the rest is cut and reported truncated). */
export const DEFAULT_MAX_FEED_BYTES = 50 * 1024 * 1024;
/** Errors kept per document. */
export const MAX_FEED_ERRORS = 20;

export type FeedKind = 'rss' | 'atom' | 'json' | 'invalid';

export interface FeedParseResult {
  kind: FeedKind;
  /** Item links: resolved, normalised, distinct, in document order; at most maxLinks. */
  links: string[];
  errors: string[];
  /** Links were left out: the body was longer than maxBytes, or it had more than maxLinks. */
  truncated: boolean;
}

export interface ParseFeedOptions {
  /** The feed's own URL: the base of its relative links, and named in errors. */
  url: string;
  /** Only its charset parameter is used. */
  contentType: string | null;
  /** Distinct links kept (default DEFAULT_MAX_FEED_LINKS). */
  maxLinks?: number;
  /** Bytes of the body read (default DEFAULT_MAX_FEED_BYTES). */
  maxBytes?: number;
}

/** Types that are always feeds. application/json and the XML types are not: those are sniffed (looksLikeFeed). */
const FEED_TYPES = new Set(['application/rss+xml', 'application/atom+xml', 'application/feed+json']);
/** Types under which servers commonly send feeds, so their bodies are worth a look. */
const SNIFFED_TYPES = new Set(['', 'text/xml', 'application/xml', 'application/rdf+xml', 'application/json', 'text/plain', 'application/octet-stream']);
/** Bytes looked at by looksLikeFeed. */
const SNIFF_BYTES = 1024;
const JSON_FEED_VERSION = 'https://jsonfeed.org/version/';

export function isFeedContentType(contentType: string | null | undefined): boolean {
  return FEED_TYPES.has(mediaTypeOf(contentType));
}

/**
 * Whether a response is worth parseFeed: a feed type, or a type feeds are
 * commonly served as whose first bytes are a feed's (root rss, feed or
 * rdf:RDF after the XML prolog; a JSON object naming a jsonfeed.org version).
 */
export function looksLikeFeed(body: Uint8Array, contentType: string | null): boolean {
  if (isFeedContentType(contentType)) return true;
  if (!SNIFFED_TYPES.has(mediaTypeOf(contentType))) return false;
  return sniff(decodeHead(body.subarray(0, SNIFF_BYTES))) !== null;
}

export function parseFeed(body: Uint8Array, opts: ParseFeedOptions): FeedParseResult {
  const out = new Collector(opts.url, Math.max(0, Math.floor(opts.maxLinks ?? DEFAULT_MAX_FEED_LINKS)));
  try {
    const maxBytes = Math.max(1, Math.floor(opts.maxBytes ?? DEFAULT_MAX_FEED_BYTES));
    let raw = body;
    if (raw.length > maxBytes) {
      raw = raw.subarray(0, maxBytes);
      out.truncated = true;
    }
    const { text: decoded } = decodeBody(raw, contentTypeFor(raw, opts.contentType));
    const text = decoded.charCodeAt(0) === 0xfeff ? decoded.slice(1) : decoded;
    let start = 0;
    while (start < text.length && isJsonSpace(text.charCodeAt(start))) start++;
    if (start >= text.length) return out.fail(`empty body, not a feed (${opts.url})`);
    const first = text[start];
    if (first === '<') return parseXml(text, out);
    if (first === '{') return parseJson(text, start, out);
    return out.fail(`not a feed: the body starts with neither "<" nor "{" (${opts.url})`);
  } catch (cause) {
    // Nothing above should throw; if something does, the caller gets a result all the same.
    return out.fail(`internal error while parsing the feed ${opts.url}: ${String(cause)}`);
  }
}

// ---------------------------------------------------------------------------

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** The first bytes as text: UTF-16 when a BOM says so, else UTF-8 (an ASCII-compatible encoding reads the same for markup). */
function decodeHead(head: Uint8Array): string {
  if (head[0] === 0xff && head[1] === 0xfe) return new TextDecoder('utf-16le').decode(head);
  if (head[0] === 0xfe && head[1] === 0xff) return new TextDecoder('utf-16be').decode(head);
  return new TextDecoder('utf-8').decode(head);
}

/** 'xml' or 'json' when `head` starts like a feed, else null. */
function sniff(head: string): 'xml' | 'json' | null {
  let i = head.charCodeAt(0) === 0xfeff ? 1 : 0;
  const skipSpace = () => {
    while (i < head.length && head.charCodeAt(i) <= 0x20) i++;
  };
  skipSpace();
  if (head[i] === '{') {
    // JSON may escape "/" as "\/".
    return /"version"\s*:\s*"https:(?:\\?\/){2}jsonfeed\.org(?:\\?\/)version(?:\\?\/)/.test(head.slice(i)) ? 'json' : null;
  }
  // The prolog: XML declaration, processing instructions, comments, doctype.
  for (;;) {
    skipSpace();
    if (head.startsWith('<?', i)) {
      const end = head.indexOf('?>', i + 2);
      if (end === -1) return null;
      i = end + 2;
    } else if (head.startsWith('<!--', i)) {
      const end = head.indexOf('-->', i + 4);
      if (end === -1) return null;
      i = end + 3;
    } else if (head.startsWith('<!', i)) {
      const end = head.indexOf('>', i + 2);
      if (end === -1) return null;
      i = end + 1;
    } else {
      break;
    }
  }
  const m = /^<([A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)[\s/>]/.exec(head.slice(i, i + 100));
  if (!m) return null;
  const local = m[2];
  if (local === 'rss' || local === 'feed' || (local === 'RDF' && m[1] !== undefined)) return 'xml';
  return null;
}

// The HTTP charset describes the bytes on the wire; when it is absent the XML
// declaration's encoding is the document's own statement (decodeBody gives a
// BOM precedence over both).
function contentTypeFor(raw: Uint8Array, contentType: string | null): string | null {
  if (contentType && /charset\s*=/i.test(contentType)) return contentType;
  const head = Buffer.from(raw.buffer, raw.byteOffset, Math.min(raw.length, 256)).toString('latin1');
  const m = /^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([\w.:-]+)["']/.exec(head);
  // A declaration readable as ASCII means the bytes are not UTF-16, whatever it says.
  if (m) return `application/xml; charset=${/^utf-?16/i.test(m[1]) ? 'utf-8' : m[1]}`;
  return contentType;
}

class Collector {
  readonly links: string[] = [];
  truncated = false;
  /** Set once maxLinks is reached and one more link was found: parsing may stop. */
  full = false;
  private readonly seen = new Set<string>();
  private readonly errors: string[] = [];
  private unusable = 0;

  constructor(
    readonly url: string,
    private readonly maxLinks: number,
  ) {}

  /** One item's link, relative to `base` (the feed URL or an xml:base). */
  add(raw: string, base: string): void {
    if (this.full) return;
    let url: string;
    try {
      url = normalizeUrl(raw.trim(), base);
    } catch (err) {
      if (!(err instanceof UrlError)) throw err;
      this.unusable++;
      return;
    }
    if (this.seen.has(url)) return;
    if (this.links.length >= this.maxLinks) {
      this.truncated = true;
      this.full = true;
      return;
    }
    this.seen.add(url);
    this.links.push(url);
  }

  error(message: string): void {
    if (this.errors.length < MAX_FEED_ERRORS) this.errors.push(message);
  }

  fail(message: string): FeedParseResult {
    this.error(message);
    return this.result('invalid');
  }

  result(kind: FeedKind): FeedParseResult {
    const errors = [...this.errors];
    if (this.unusable > 0) errors.push(`${this.unusable} item link(s) are not crawlable URLs (${this.url})`);
    return { kind, links: kind === 'invalid' ? [] : this.links, errors, truncated: this.truncated };
  }
}

// --- XML: RSS 2.0, RSS 1.0 (RDF), Atom ------------------------------------------

/** Characters handed to the tokenizer at a time, so that a full feed stops the work early. */
const XML_CHUNK_CHARS = 64 * 1024;
/** Element names kept on the stack; deeper elements are only counted (feeds' elements of interest are at depth 4 at most). */
const MAX_TRACKED_DEPTH = 16;
/** Longest link text gathered; a longer one cannot be a URL worth keeping (normalizeUrl's own limit is far below). */
const MAX_TEXT_CHARS = 64 * 1024;
/** Attributes read, lower-cased. */
const XML_ATTRS = new Set(['href', 'rel', 'xml:base', 'rdf:about', 'about', 'ispermalink']);

function parseXml(text: string, out: Collector): FeedParseResult {
  const reader = new FeedXml(text, out);
  const tokenizer = new Tokenizer({ xmlMode: true, decodeEntities: true }, reader);
  for (let at = 0; at < text.length && !reader.stopped; at += XML_CHUNK_CHARS) {
    tokenizer.write(text.slice(at, at + XML_CHUNK_CHARS));
  }
  if (!reader.stopped) tokenizer.end();
  if (reader.kind === null) {
    return out.fail(reader.rootName === null ? `no root element, not a feed (${out.url})` : `root element <${reader.rootName}> is not rss, feed or rdf:RDF (${out.url})`);
  }
  return out.result(reader.kind);
}

interface RssItem {
  depth: number;
  base: string;
  link: string | null;
  guid: string | null;
  about: string | null;
}

class FeedXml implements Callbacks {
  kind: 'rss' | 'atom' | null = null;
  rootName: string | null = null;
  stopped = false;

  /** Open elements: their local names, lower-cased, up to MAX_TRACKED_DEPTH. */
  private readonly names: string[] = [];
  /** xml:base in force at each tracked depth. */
  private readonly bases: string[] = [];
  private depth = 0;
  private tagName = '';
  private attribs: Record<string, string> = {};
  private attribName = '';
  private attribValue = '';
  private item: RssItem | null = null;
  /** Atom: the depth of the open <entry>, or -1. */
  private entryDepth = -1;
  /** The element whose text is being gathered (an RSS item's link or guid), or null. */
  private capture: { field: 'link' | 'guid'; depth: number; permalink: boolean } | null = null;
  private text = '';

  constructor(
    private readonly src: string,
    private readonly out: Collector,
  ) {}

  onopentagname(start: number, end: number): void {
    this.tagName = this.src.slice(start, Math.min(end, start + 200));
    this.attribs = {};
  }

  onattribname(start: number, end: number): void {
    const name = end - start > 20 ? '' : this.src.slice(start, end).toLowerCase();
    this.attribName = XML_ATTRS.has(name) ? name : '';
    this.attribValue = '';
  }

  onattribdata(start: number, end: number): void {
    if (this.attribName) this.attribValue += this.src.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.attribName) this.attribValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    if (this.attribName && !(this.attribName in this.attribs)) this.attribs[this.attribName] = this.attribValue;
    this.attribName = '';
  }

  onopentagend(): void {
    this.open(false);
  }

  onselfclosingtag(): void {
    this.open(true);
  }

  onclosetag(start: number, end: number): void {
    if (this.stopped || this.depth === 0) return;
    const local = localName(this.src.slice(start, Math.min(end, start + 200)));
    // A stray end tag that closes nothing open is skipped, not trusted.
    if (this.depth <= MAX_TRACKED_DEPTH && this.names[this.depth - 1] !== local) {
      this.out.error(`unexpected </${local}> (${this.out.url})`);
      return;
    }
    this.close();
  }

  ontext(start: number, end: number): void {
    if (this.capture !== null) this.addText(this.src.slice(start, Math.min(end, start + MAX_TEXT_CHARS)));
  }

  ontextentity(codepoint: number): void {
    if (this.capture !== null) this.addText(String.fromCodePoint(codepoint));
  }

  oncdata(start: number, end: number, offset: number): void {
    if (this.capture !== null) this.addText(this.src.slice(start, Math.min(end - offset, start + MAX_TEXT_CHARS)));
  }

  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}
  onend(): void {}

  private addText(s: string): void {
    if (this.text.length < MAX_TEXT_CHARS) this.text += s;
  }

  private open(selfClosed: boolean): void {
    if (this.stopped) return;
    const local = localName(this.tagName);
    const depth = this.depth + 1;
    const a = this.attribs;
    const parentBase = depth === 1 ? this.out.url : this.bases[Math.min(depth, MAX_TRACKED_DEPTH) - 2];
    const base = a['xml:base'] !== undefined ? resolveBase(a['xml:base'], parentBase) : parentBase;

    if (depth === 1) {
      this.rootName = this.tagName;
      if (local === 'rss' || (local === 'rdf' && this.tagName.includes(':'))) this.kind = 'rss';
      else if (local === 'feed') this.kind = 'atom';
      else {
        this.stopped = true;
        return;
      }
    } else if (this.kind === 'rss') {
      this.openRss(local, depth, base);
    } else if (this.kind === 'atom') {
      if (depth === 2 && local === 'entry') this.entryDepth = depth;
      else if (depth === this.entryDepth + 1 && local === 'link' && a.href !== undefined) {
        const rel = (a.rel ?? 'alternate').trim().toLowerCase();
        if (rel === 'alternate' || rel === '') this.add(a.href, base);
      }
    }

    if (selfClosed) {
      // Opened and closed at once: nothing stays open.
      if (this.capture !== null && this.capture.depth === depth) this.capture = null;
      if (this.item !== null && this.item.depth === depth) this.endItem();
      if (this.entryDepth === depth) this.entryDepth = -1;
      return;
    }
    this.depth = depth;
    if (depth <= MAX_TRACKED_DEPTH) {
      this.names.push(local);
      this.bases.push(base);
    }
  }

  private openRss(local: string, depth: number, base: string): void {
    const a = this.attribs;
    const parent = this.names[depth - 2];
    // RSS 2.0: rss > channel > item; RSS 1.0: rdf:RDF > item.
    if (this.item === null && local === 'item' && ((depth === 3 && parent === 'channel') || (depth === 2 && this.rootName!.includes(':')))) {
      this.item = { depth, base, link: null, guid: null, about: a['rdf:about'] ?? a.about ?? null };
      return;
    }
    // Only an unprefixed <link> is RSS's: <atom:link> in an item is not the item's page.
    if (this.item !== null && depth === this.item.depth + 1 && this.capture === null) {
      if (local === 'link' && !this.tagName.includes(':')) this.startCapture('link', depth, true);
      else if (local === 'guid') this.startCapture('guid', depth, (a.ispermalink ?? 'true').trim().toLowerCase() !== 'false');
    }
  }

  private startCapture(field: 'link' | 'guid', depth: number, permalink: boolean): void {
    this.capture = { field, depth, permalink };
    this.text = '';
  }

  private close(): void {
    const depth = this.depth;
    if (this.capture !== null && this.capture.depth === depth) {
      const value = this.text.trim();
      if (this.item !== null && value !== '') {
        if (this.capture.field === 'link' && this.item.link === null) this.item.link = value;
        // A guid is the item's page only when it says so (the default) and is an absolute URL: guids such as "123" or "tag:…" are not.
        if (this.capture.field === 'guid' && this.capture.permalink && /^https?:\/\//i.test(value)) this.item.guid = value;
      }
      this.capture = null;
      this.text = '';
    }
    if (this.item !== null && this.item.depth === depth) this.endItem();
    if (this.entryDepth === depth) this.entryDepth = -1;
    if (depth <= MAX_TRACKED_DEPTH) {
      this.names.pop();
      this.bases.pop();
    }
    this.depth--;
  }

  private endItem(): void {
    const item = this.item!;
    this.item = null;
    const raw = item.link ?? item.guid ?? item.about;
    if (raw !== null) this.add(raw, item.base);
  }

  private add(raw: string, base: string): void {
    this.out.add(raw, base);
    if (this.out.full) this.stopped = true;
  }
}

function localName(qname: string): string {
  const colon = qname.lastIndexOf(':');
  return (colon === -1 ? qname : qname.slice(colon + 1)).toLowerCase();
}

function resolveBase(href: string, parent: string): string {
  try {
    return new URL(href.trim(), parent).href;
  } catch {
    return parent; // an unusable xml:base is ignored
  }
}

// --- JSON Feed 1.0 / 1.1 ----------------------------------------------------

/** Containers open at once; JSON Feed nests three deep, and a deeper document is not one. */
const MAX_JSON_DEPTH = 256;
/** Longest string value kept (the version, item URLs); longer ones are scanned, not kept. */
const MAX_JSON_STRING = 64 * 1024;

type Role = 'root' | 'items' | 'item' | 'other';

interface Frame {
  obj: boolean;
  role: Role;
  key: string | null;
  url?: string;
  externalUrl?: string;
}

const enum Want {
  Value,
  ValueOrEnd,
  Key,
  KeyOrEnd,
  Colon,
  CommaOrEnd,
  Done,
}

/** Ends the JSON scan at its first syntax error (caught in parseJson: it never leaves this module). */
class FeedSyntaxError extends CrawlerError<'FEED_SYNTAX'> {
  constructor(message: string) {
    super('FEED_SYNTAX', message);
    this.name = 'FeedSyntaxError';
  }
}

/** Characters of JSON numbers and of true/false/null (and of junk in their place, which is then rejected by position). */
function isLiteralChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2d || c === 0x2e || c === 0x5f;
}

/**
 * A JSON string from its opening quote at `at`: its value (built only when
 * `keep`; null when too long to keep) and the index past its closing quote.
 * `fail` reports a syntax error at an index.
 */
function readJsonString(text: string, at: number, keep: boolean, fail: (at: number, what: string) => never): { value: string | null; end: number } {
  const n = text.length;
  let i = at + 1;
  let s = '';
  let from = i;
  let tooLong = false;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      if (keep && !tooLong) s += text.slice(from, i);
      return { value: keep && !tooLong && s.length <= MAX_JSON_STRING ? s : null, end: i + 1 };
    }
    if (c === 0x5c) {
      if (keep && !tooLong) s += text.slice(from, i);
      const e = text[i + 1];
      let add = '';
      let len = 2;
      if (e === 'u') {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail(i, 'bad \\u escape');
        add = String.fromCharCode(parseInt(hex, 16));
        len = 6;
      } else if (e !== undefined && '"\\/bfnrt'.includes(e)) {
        add = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[e]!;
      } else {
        fail(i, 'bad escape');
      }
      if (keep && !tooLong) s += add;
      i += len;
      from = i;
      if (s.length > MAX_JSON_STRING) tooLong = true;
      continue;
    }
    i++;
    if (keep && !tooLong && i - from > MAX_JSON_STRING) tooLong = true;
  }
  return fail(i, 'unterminated string');
}

function parseJson(text: string, start: number, out: Collector): FeedParseResult {
  const n = text.length;
  let i = start;
  const stack: Frame[] = [];
  // Typed wide: the closures below change it too.
  let want = Want.Value as Want;
  let version: string | null = null;
  const fail = (what: string): never => {
    throw new FeedSyntaxError(`${what} at character ${i} (${out.url})`);
  };

  /** A string from its opening quote at `i`, which it moves past the closing one. */
  const readString = (keep: boolean): string | null => {
    const r = readJsonString(text, i, keep, (at, what) => {
      i = at;
      return fail(what);
    });
    i = r.end;
    return r.value;
  };

  const afterValue = () => {
    const top = stack[stack.length - 1];
    if (top === undefined) want = Want.Done;
    else {
      if (top.obj) top.key = null;
      want = Want.CommaOrEnd;
    }
  };

  const roleOf = (obj: boolean): Role => {
    const parent = stack[stack.length - 1];
    if (parent === undefined) return obj ? 'root' : 'other';
    if (parent.role === 'root' && parent.key === 'items' && !obj) return 'items';
    if (parent.role === 'items' && obj) return 'item';
    return 'other';
  };

  const close = () => {
    const frame = stack.pop()!;
    i++;
    // An item counts once it is complete: a cut body never yields half an item.
    if (frame.role === 'item') {
      const raw = frame.url ?? frame.externalUrl;
      if (raw !== undefined) out.add(raw, out.url);
    }
    afterValue();
  };

  try {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (isJsonSpace(c)) {
        i++;
        continue;
      }
      switch (want) {
        case Want.Value:
        case Want.ValueOrEnd: {
          if (want === Want.ValueOrEnd && c === 0x5d) {
            close();
            break;
          }
          if (c === 0x7b || c === 0x5b) {
            if (stack.length >= MAX_JSON_DEPTH) fail(`nesting deeper than ${MAX_JSON_DEPTH}`);
            const obj = c === 0x7b;
            stack.push({ obj, role: roleOf(obj), key: null });
            want = obj ? Want.KeyOrEnd : Want.ValueOrEnd;
            i++;
          } else if (c === 0x22) {
            const top = stack[stack.length - 1];
            const key = top?.obj ? top.key : null;
            const keep = (top?.role === 'root' && key === 'version') || (top?.role === 'item' && (key === 'url' || key === 'external_url'));
            const s = readString(keep);
            if (keep && s !== null) {
              if (top!.role === 'root') version = s;
              else if (key === 'url') top!.url ??= s;
              else top!.externalUrl ??= s;
            }
            afterValue();
          } else {
            // A number or literal: its characters up to the next delimiter.
            const from = i;
            while (i < n && isLiteralChar(text.charCodeAt(i))) i++;
            if (i === from) fail(`unexpected ${JSON.stringify(text[i])}`);
            afterValue();
          }
          break;
        }
        case Want.Key:
        case Want.KeyOrEnd:
          if (want === Want.KeyOrEnd && c === 0x7d) close();
          else if (c === 0x22) {
            stack[stack.length - 1].key = readString(true);
            want = Want.Colon;
          } else fail('expected a key');
          break;
        case Want.Colon:
          if (c !== 0x3a) fail('expected ":"');
          i++;
          want = Want.Value;
          break;
        case Want.CommaOrEnd: {
          const top = stack[stack.length - 1];
          if (c === 0x2c) {
            i++;
            want = top.obj ? Want.Key : Want.Value;
          } else if (c === (top.obj ? 0x7d : 0x5d)) close();
          else fail(`expected "," or "${top.obj ? '}' : ']'}"`);
          break;
        }
        case Want.Done:
          fail('text after the end of the document');
      }
    }
    if (want !== Want.Done) fail('unexpected end of the document');
  } catch (err) {
    if (!(err instanceof FeedSyntaxError)) throw err;
    out.error(err.message);
  }
  if (version === null || !version.startsWith(JSON_FEED_VERSION)) {
    return out.fail(`not a JSON Feed: no version starting ${JSON_FEED_VERSION} (${out.url})`);
  }
  return out.result('json');
}
