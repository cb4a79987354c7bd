// Link extraction from fetched HTML: outgoing links (normalised, so the
// frontier can dedupe them directly), plus the page-level signals that decide
// what the crawler may do with them (<base>, canonical, meta robots).
//
// A streaming tokenizer (htmlparser2's), not a tree builder: a page that
// nests 400,000 <div>s makes a browser-grade tree builder (parse5) walk its
// stack of open elements at every tag, quadratic in the depth, and
// htmlparser2's own Parser keeps its stack with Array#unshift, just as
// quadratic. The crawler needs no tree: the elements it reads (a, area,
// iframe, frame, base, meta, link, title) are found from the tags alone, and
// the few nestings that matter (raw-text elements, SVG/MathML for <title>,
// what the page text leaves out) are counted per element name, O(1) a tag.
// The body is fed in chunks and the clock looked at between them, so a page
// whose parsing outlasts content.maxParseMs ends with what it gave so far.
//
// The same pass, when asked, collects the page's requisites (issue 24): what
// a browser loads to show the page (images, stylesheets, scripts, media,
// fonts named in inline CSS), so that an archive replays the page whole.
// Their raw values are collected during the pass and resolved after it, in
// batches under the same clock as links.
import { Tokenizer, type TokenizerCallbacks as Callbacks } from 'htmlparser2';
import { mediaTypeOf } from '../http/media-type';
import { normalizeUrl, type NormalizeOptions } from '../url/normalize';
import { UrlError } from '../url/url-error';
import { requisiteUrl, scanCss } from './css';
import { srcsetUrls } from './srcset';

export interface ExtractOptions extends NormalizeOptions {
  /** Also report iframe[src] and frame[src] as links (default true). */
  includeFrames?: boolean;
  /** Also return the page's visible text (for near-duplicate detection). */
  withText?: boolean;
  /**
   * Distinct links kept, the first in document order (budgets.maxLinksPerPage);
   * the others are counted in `linksDropped` (and not in `invalid`). Default: all.
   */
  maxLinks?: number;
  /** Time limit of the whole extraction (content.maxParseMs); past it the result has `timeout`. Default: none. */
  maxParseMs?: number;
  /** The clock the time limit is read from (milliseconds); tests give their own. */
  now?: () => number;
  /**
   * Also collect the page's requisites (default false; when false the pass
   * reads nothing more and `requisites` is empty).
   */
  requisites?: boolean;
  /**
   * Distinct requisites kept, the first in document order; the others are
   * counted in `requisitesDropped`. Default: all.
   */
  maxRequisites?: number;
}

/**
 * A resource the page loads to display itself. Its URL is spelt as the
 * browser requests it: resolved against the page's base, fragment dropped,
 * query kept exactly as written (see REQUISITE_URL_OPTIONS).
 */
export interface ExtractedRequisite {
  url: string;
  /** Element of the first occurrence ('img', 'link', 'script', 'source', …), or 'style' for url() in a <style> block or a style attribute. */
  tag: string;
}

export interface ExtractedLink {
  /** Normalised absolute URL. */
  url: string;
  /**
   * True when no occurrence of this URL may be followed: every occurrence had
   * rel nofollow/ugc/sponsored, or the page's meta robots says nofollow.
   */
  nofollow: boolean;
  /** Element the first occurrence came from: 'a', 'area', 'iframe' or 'frame'. */
  tag: string;
}

export interface ExtractedPage {
  /** Normalised, de-duplicated, in document order of first occurrence; at most `maxLinks`. */
  links: ExtractedLink[];
  /**
   * Links past `maxLinks`, not in `links`: their distinct spellings in the
   * page that do not spell a kept link (they are not normalised).
   */
  linksDropped: number;
  /**
   * hrefs/srcs that could not become crawlable URLs: unparsable, empty,
   * too long, or another scheme (mailto:, javascript:, tel:, data:, …).
   */
  invalid: number;
  /** First <base href>, resolved against the page URL; null if absent or unusable. */
  baseHref: string | null;
  /** First <link rel=canonical>, normalised; null if absent or unusable. */
  canonical: string | null;
  metaRobots: { noindex: boolean; nofollow: boolean };
  /** Whitespace-collapsed document title; null if absent or blank. */
  title: string | null;
  /** Whitespace-collapsed text of the body without scripts and styles; only with `withText`. */
  text?: string;
  /**
   * With `requisites`: distinct, in document order of first occurrence, at
   * most `maxRequisites`. References that name nothing to fetch (data:,
   * blob:, about:, javascript:, fragment-only) or that cannot be fetched
   * (unparsable, other schemes, too long) are left out and not counted in
   * `invalid`, which stays about links.
   */
  requisites: ExtractedRequisite[];
  /** Requisites past `maxRequisites`: their distinct spellings that do not spell a kept requisite (they are not resolved). */
  requisitesDropped: number;
  /**
   * Feeds the page announces (<link rel=alternate> with an RSS, Atom or JSON
   * type): normalised like links, distinct, in document order, at most
   * MAX_FEEDS. Collected whether or not `requisites` is set.
   */
  feeds: string[];
  /**
   * Set when parsing outlasted `maxParseMs`: everything above is what the
   * part of the page parsed in time gave. The index line's error as is.
   */
  timeout?: { code: typeof PARSE_TIMEOUT; message: string };
}

/** The code of a page whose parsing outlasted its time limit (ExtractedPage.timeout; the index line's error). */
export const PARSE_TIMEOUT = 'PARSE_TIMEOUT';

/** Feeds kept per page: a page announces one or two; more is a trap or noise. */
export const MAX_FEEDS = 10;

const NOFOLLOW_RELS = new Set(['nofollow', 'ugc', 'sponsored']);
/**
 * Feed types of <link rel=alternate>, compared without parameters. Plain
 * application/json only for an href that says feed (`/feed.json`): JSON Feed
 * is often served so, but WordPress announces its REST API with that type on
 * every page, a different URL each time, which would cost a wasted request
 * a page.
 */
const FEED_TYPES = new Set(['application/rss+xml', 'application/atom+xml', 'application/feed+json']);
const isFeedLink = (type: string, href: string) => FEED_TYPES.has(type) || (type === 'application/json' && /feed/i.test(href));
/** Raw feed hrefs collected per page before resolving: bounds what a page of a million alternates costs. */
const MAX_FEED_CANDIDATES = MAX_FEEDS * 10;
/**
 * <link> rel tokens whose href the page loads. 'icon' covers "shortcut icon";
 * Apple's touch icons (also the "-precomposed" variant) and Safari's
 * mask-icon are not loaded by a desktop browser but are by the devices a
 * replay may be shown on, and cost one small fetch each. 'alternate
 * stylesheet' is a stylesheet a user can switch to. prefetch/prerender are
 * not requisites: they name what the next page may need.
 */
const REQUISITE_RELS = new Set(['stylesheet', 'icon', 'preload', 'modulepreload', 'manifest', 'apple-touch-icon', 'apple-touch-icon-precomposed', 'mask-icon']);
/** Characters handed to the tokenizer between two looks at the clock. */
const CHUNK_CHARS = 64 * 1024;
/** Links normalised between two looks at the clock. */
const NORMALIZE_BATCH = 1024;

/** The elements whose attributes are read, and which attributes. */
const WANTED: Record<string, readonly string[]> = {
  a: ['href', 'rel'],
  area: ['href', 'rel'],
  iframe: ['src'],
  frame: ['src'],
  base: ['href'],
  meta: ['name', 'content'],
  link: ['rel', 'href', 'type'],
};
/** Attributes read from every element when requisites are wanted: the usual lazy-loading conventions and inline CSS. */
const ANY_ELEMENT_REQUISITES = ['style', 'data-src', 'data-srcset', 'data-original'];
/** Attributes that name requisites, by element (besides ANY_ELEMENT_REQUISITES). */
const REQUISITE_ATTRS: Record<string, readonly string[]> = {
  img: ['src', 'srcset'],
  source: ['src', 'srcset'],
  link: ['imagesrcset'],
  script: ['src'],
  video: ['src', 'poster'],
  audio: ['src'],
  track: ['src'],
  embed: ['src'],
  object: ['data'],
  input: ['type', 'src'],
  // Legacy presentational backgrounds, still rendered by browsers.
  body: ['background'],
  table: ['background'],
  td: ['background'],
  th: ['background'],
  // SVG: an external image, or a symbol of an external sprite (<use href="sprite.svg#i">).
  image: ['href', 'xlink:href'],
  use: ['href', 'xlink:href'],
};
/** WANTED with the requisite attributes added, for every element that has any. */
const WANTED_WITH_REQUISITES: Record<string, readonly string[]> = (() => {
  const out: Record<string, readonly string[]> = {};
  for (const name of new Set([...Object.keys(WANTED), ...Object.keys(REQUISITE_ATTRS)])) {
    out[name] = [...new Set([...(WANTED[name] ?? []), ...(REQUISITE_ATTRS[name] ?? []), ...ANY_ELEMENT_REQUISITES])];
  }
  return out;
})();
/**
 * Elements whose content a browser reads as text, not markup, and that the
 * tokenizer does not already treat so (it does for script, style, title,
 * textarea and xmp): their tags are ignored until the element's end tag.
 */
const RAW_TEXT = new Set(['iframe', 'noembed', 'noframes']);
/** Elements whose text is not the page's text (scripting is off, so <noscript> is, for links, ordinary markup). */
const NOT_TEXT = new Set(['script', 'style', 'noscript', 'template', 'title']);
/** Foreign content: a <title> inside is an SVG/MathML tooltip, not the document title. */
const FOREIGN = new Set(['svg', 'math']);

interface RawLink {
  raw: string;
  tag: string;
  relNofollow: boolean;
}

interface RawRequisite {
  raw: string;
  tag: string;
}

/**
 * Extract links and page signals. Throws UrlError only when `pageUrl` itself
 * is not an http(s) URL; any HTML, however malformed, yields a result, in
 * time linear in its length.
 */
export function extractLinks(html: string, pageUrl: string, opts: ExtractOptions = {}): ExtractedPage {
  const page = parsePageUrl(pageUrl);
  const now = opts.now ?? Date.now;
  const started = now();
  const overTime = () => opts.maxParseMs !== undefined && now() - started > opts.maxParseMs;
  const scan = new Scan(html, opts.includeFrames !== false, opts.withText === true, opts.requisites === true);
  const tokenizer = new Tokenizer({ decodeEntities: true }, scan);
  let timedOut = false;
  for (let at = 0; at < html.length; at += CHUNK_CHARS) {
    tokenizer.write(html.slice(at, at + CHUNK_CHARS));
    if (at + CHUNK_CHARS < html.length && overTime()) {
      timedOut = true;
      break;
    }
  }
  if (!timedOut) tokenizer.end();

  // Browsers use the first <base> that has an href, wherever it sits, for
  // every relative URL in the document, including those that precede it:
  // hence links are resolved only once the whole page is read.
  const { baseHref, base } = resolveBase(scan.baseHref, page);
  const metaRobots = scan.metaRobots;

  // One normalisation per distinct raw value: pages repeat the same hrefs in
  // navigation and footers many times.
  const cache = new Map<string, string | null>();
  const normalize = (raw: string): string | null => {
    let out = cache.get(raw);
    if (out === undefined) {
      try {
        out = normalizeUrl(raw, base, opts);
      } catch (err) {
        if (!(err instanceof UrlError)) throw err;
        out = null;
      }
      cache.set(raw, out);
    }
    return out;
  };

  const maxLinks = opts.maxLinks ?? Infinity;
  const links: ExtractedLink[] = [];
  const indexByUrl = new Map<string, number>();
  // Spellings past the cap: counted, not normalised (normalising what is
  // dropped would spend a link bomb's time for a number).
  const dropped = new Set<string>();
  let invalid = 0;
  // Out of time while resolving: what is left (links, then requisites) stays unresolved.
  let resolveTimedOut = false;
  for (const [i, l] of scan.links.entries()) {
    if (i % NORMALIZE_BATCH === NORMALIZE_BATCH - 1 && !timedOut && overTime()) {
      timedOut = true;
      resolveTimedOut = true;
      break;
    }
    if (links.length >= maxLinks && !cache.has(l.raw)) {
      // Without its fragment, the commonest second spelling of one URL.
      const spelling = withoutFragment(l.raw);
      if (!cache.has(spelling)) dropped.add(spelling);
      continue;
    }
    const url = normalize(l.raw);
    if (url === null) {
      invalid++;
      continue;
    }
    const nofollow = metaRobots.nofollow || l.relNofollow;
    const seen = indexByUrl.get(url);
    if (seen === undefined) {
      indexByUrl.set(url, links.length);
      links.push({ url, nofollow, tag: l.tag });
    } else if (!nofollow) {
      // One followable occurrence is enough to follow the URL.
      links[seen].nofollow = false;
    }
  }
  const linksDropped = dropped.size;

  const requisites: ExtractedRequisite[] = [];
  const requisiteSeen = new Set<string>();
  const requisiteCache = new Map<string, string | null | undefined>();
  const requisitesPast = new Set<string>();
  const maxRequisites = opts.maxRequisites ?? Infinity;
  for (const [i, r] of (resolveTimedOut ? [] : scan.requisites).entries()) {
    if (i % NORMALIZE_BATCH === NORMALIZE_BATCH - 1 && !timedOut && overTime()) {
      timedOut = true;
      break;
    }
    let url = requisiteCache.get(r.raw);
    if (url === undefined && !requisiteCache.has(r.raw)) {
      if (requisites.length >= maxRequisites) {
        // As for links: past the cap, spellings are counted, not resolved.
        const spelling = withoutFragment(r.raw);
        if (!requisiteCache.has(spelling)) requisitesPast.add(spelling);
        continue;
      }
      url = requisiteUrl(r.raw, base, opts.maxLength);
      requisiteCache.set(r.raw, url);
    }
    if (url === undefined || url === null || requisiteSeen.has(url)) continue;
    if (requisites.length >= maxRequisites) {
      requisitesPast.add(withoutFragment(r.raw));
      continue;
    }
    requisiteSeen.add(url);
    requisites.push({ url, tag: r.tag });
  }

  const feeds: string[] = [];
  for (const raw of scan.feedHrefs) {
    const url = normalize(raw);
    if (url !== null && !feeds.includes(url)) feeds.push(url);
    if (feeds.length >= MAX_FEEDS) break;
  }

  const canonical = scan.canonicalHref === null ? null : normalize(scan.canonicalHref);
  const result: ExtractedPage = {
    links,
    linksDropped,
    invalid,
    baseHref,
    canonical,
    metaRobots,
    title: collapse(scan.titleText),
    requisites,
    requisitesDropped: requisitesPast.size,
    feeds,
  };
  if (opts.withText) result.text = collapse(scan.text.join('')) ?? '';
  if (timedOut) {
    result.timeout = {
      code: PARSE_TIMEOUT,
      message: `parsing for links took longer than ${opts.maxParseMs} ms; the links of the part parsed in time (${links.length}) are kept`,
    };
  }
  return result;
}

/**
 * The tokenizer's listener: keeps the raw values of the attributes the
 * crawler reads and the few counters it needs. Positions are in the whole
 * page (the tokenizer counts across chunks), so values are sliced from it.
 */
class Scan implements Callbacks {
  readonly links: RawLink[] = [];
  readonly requisites: RawRequisite[] = [];
  readonly feedHrefs: string[] = [];
  baseHref: string | null = null;
  canonicalHref: string | null = null;
  readonly metaRobots = { noindex: false, nofollow: false };
  /** null: no document title seen yet. */
  titleText: string | null = null;
  readonly text: string[] = [];

  /** Open elements by name, for the few whose nesting matters (never a stack: see the file's head). */
  private readonly open = new Map<string, number>();
  /** Inside a raw-text element (RAW_TEXT): its name; tags are text until its end tag. */
  private rawUntil: string | null = null;
  /** Open elements that hide their text (NOT_TEXT). */
  private hidden = 0;
  /** Open <svg>/<math>. */
  private foreign = 0;
  private inTitle = false;
  private readingTitle = false;
  private tagName = '';
  private wanted: readonly string[] | null = null;
  private attribs: Record<string, string> = {};
  private attribName = '';
  private attribValue = '';
  /** Inside a <style> element, with requisites wanted: its text so far. */
  private styleText: string[] | null = null;

  constructor(
    private readonly html: string,
    private readonly frames: boolean,
    private readonly withText: boolean,
    private readonly withRequisites: boolean,
  ) {}

  onopentagname(start: number, end: number): void {
    this.tagName = this.html.slice(start, end).toLowerCase();
    if (this.rawUntil !== null) this.wanted = null;
    else if (this.withRequisites) this.wanted = WANTED_WITH_REQUISITES[this.tagName] ?? ANY_ELEMENT_REQUISITES;
    else this.wanted = WANTED[this.tagName] ?? null;
    this.attribs = {};
  }

  onattribname(start: number, end: number): void {
    // Only wanted attributes are kept, so that a huge class or data- value
    // is never copied.
    const name = this.wanted ? this.html.slice(start, end).toLowerCase() : '';
    this.attribName = name && this.wanted!.includes(name) ? name : '';
    this.attribValue = '';
  }

  onattribdata(start: number, end: number): void {
    if (this.attribName) this.attribValue += this.html.slice(start, end);
  }

  onattribentity(codepoint: number): void {
    if (this.attribName) this.attribValue += String.fromCodePoint(codepoint);
  }

  onattribend(): void {
    // The first of a repeated attribute counts, as in a browser.
    if (this.attribName && !(this.attribName in this.attribs)) this.attribs[this.attribName] = this.attribValue;
    this.attribName = '';
  }

  onopentagend(): void {
    this.openTag(false);
  }

  onselfclosingtag(): void {
    // In HTML a "/>" closes only void and foreign elements; what matters
    // here is that a self-closed <svg/> or <math/> opens nothing.
    this.openTag(FOREIGN.has(this.tagName) || this.foreign > 0);
  }

  onclosetag(start: number, end: number): void {
    const name = this.html.slice(start, end).toLowerCase();
    if (this.rawUntil !== null) {
      if (name === this.rawUntil) this.rawUntil = null;
      return;
    }
    if (name === 'title' && this.inTitle) {
      this.inTitle = false;
      this.readingTitle = false;
    }
    if (name === 'style' && this.styleText !== null) {
      this.addCss(this.styleText.join(''));
      this.styleText = null;
    }
    this.close(name);
  }

  ontext(start: number, end: number): void {
    this.addText(this.html.slice(start, end));
  }

  ontextentity(codepoint: number): void {
    this.addText(String.fromCodePoint(codepoint));
  }

  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}
  onend(): void {
    // A <style> left open at the end of the page still applies to it.
    if (this.styleText !== null) this.addCss(this.styleText.join(''));
    this.styleText = null;
  }

  private openTag(selfClosed: boolean): void {
    if (this.rawUntil !== null) return;
    const name = this.tagName;
    const a = this.attribs;
    switch (name) {
      case 'a':
      case 'area':
        if (a.href !== undefined) this.links.push({ raw: a.href, tag: name, relNofollow: hasNofollowRel(a.rel) });
        break;
      case 'iframe':
      case 'frame':
        if (this.frames && a.src !== undefined) this.links.push({ raw: a.src, tag: name, relNofollow: false });
        break;
      case 'base':
        if (this.baseHref === null && a.href !== undefined) this.baseHref = a.href;
        break;
      case 'meta':
        // Several robots metas combine: the most restrictive directive wins.
        if (a.name !== undefined && a.content !== undefined && a.name.trim().toLowerCase() === 'robots') {
          for (const token of a.content.toLowerCase().split(/[\s,]+/)) {
            if (token === 'noindex' || token === 'none') this.metaRobots.noindex = true;
            if (token === 'nofollow' || token === 'none') this.metaRobots.nofollow = true;
          }
        }
        break;
      case 'link':
        if (a.rel !== undefined && a.href !== undefined) {
          const rels = relTokens(a.rel);
          if (this.canonicalHref === null && rels.includes('canonical')) this.canonicalHref = a.href;
          if (rels.includes('alternate') && a.type !== undefined && this.feedHrefs.length < MAX_FEED_CANDIDATES && isFeedLink(mediaTypeOf(a.type), a.href))
            this.feedHrefs.push(a.href);
        }
        break;
      case 'title':
        // The tokenizer reads a title's content as text; only the first
        // outside SVG/MathML is the document's title. (A self-closed one,
        // which the tokenizer does not read as text, has none.)
        if (selfClosed) break;
        this.inTitle = true;
        if (this.titleText === null && this.foreign === 0) {
          this.titleText = '';
          this.readingTitle = true;
        }
        break;
    }
    if (this.withRequisites) this.collectRequisites(name, a, selfClosed);
    if (selfClosed) return;
    if (RAW_TEXT.has(name)) {
      this.rawUntil = name;
      return;
    }
    if (FOREIGN.has(name)) this.foreign++;
    if (NOT_TEXT.has(name)) this.hidden++;
    if (FOREIGN.has(name) || NOT_TEXT.has(name)) this.open.set(name, (this.open.get(name) ?? 0) + 1);
  }

  /** The requisites named by the attributes of one element (all already read into `a`). */
  private collectRequisites(name: string, a: Record<string, string>, selfClosed: boolean): void {
    // Methods rather than two closures made per start tag: this runs for every element of every page.
    switch (name) {
      case 'img':
      case 'source':
        this.addRequisite(name, a.src);
        this.addSrcset(name, a.srcset);
        break;
      case 'link':
        if (a.rel !== undefined && relTokens(a.rel).some((t) => REQUISITE_RELS.has(t))) {
          this.addRequisite(name, a.href);
          this.addSrcset(name, a.imagesrcset);
        }
        break;
      case 'script':
      case 'audio':
      case 'track':
      case 'embed':
        this.addRequisite(name, a.src);
        break;
      case 'video':
        this.addRequisite(name, a.src);
        this.addRequisite(name, a.poster);
        break;
      case 'object':
        this.addRequisite(name, a.data);
        break;
      case 'input':
        if (a.type !== undefined && a.type.trim().toLowerCase() === 'image') this.addRequisite(name, a.src);
        break;
      case 'body':
      case 'table':
      case 'td':
      case 'th':
        this.addRequisite(name, a.background);
        break;
      case 'image':
      case 'use':
        // SVG 2's href wins over the older xlink:href.
        this.addRequisite(name, a.href ?? a['xlink:href']);
        break;
      case 'style':
        if (!selfClosed) this.styleText = [];
        break;
    }
    this.addRequisite(name, a['data-src']);
    this.addRequisite(name, a['data-original']);
    this.addSrcset(name, a['data-srcset']);
    if (a.style !== undefined && a.style.includes('(')) this.addCss(a.style);
  }

  private addRequisite(tag: string, raw: string | undefined): void {
    if (raw !== undefined) this.requisites.push({ raw, tag });
  }

  private addSrcset(tag: string, value: string | undefined): void {
    if (value !== undefined) for (const raw of srcsetUrls(value)) this.requisites.push({ raw, tag });
  }

  private addCss(css: string): void {
    scanCss(css, (raw) => this.requisites.push({ raw, tag: 'style' }));
  }

  private close(name: string): void {
    const n = this.open.get(name);
    if (!n) return;
    this.open.set(name, n - 1);
    if (FOREIGN.has(name)) this.foreign--;
    if (NOT_TEXT.has(name)) this.hidden--;
  }

  private addText(s: string): void {
    if (this.rawUntil !== null) return;
    if (this.styleText !== null) this.styleText.push(s);
    if (this.readingTitle) this.titleText += s;
    // A title's text is in no body, whichever element holds it.
    if (this.withText && this.hidden === 0 && !this.inTitle) this.text.push(s);
  }
}

function parsePageUrl(pageUrl: string): URL {
  let page: URL;
  try {
    page = new URL(pageUrl);
  } catch (cause) {
    throw new UrlError('INVALID_URL', String(pageUrl), `Page URL is not a URL: ${String(pageUrl).slice(0, 200)}`, {
      cause,
    });
  }
  if (page.protocol !== 'http:' && page.protocol !== 'https:') {
    throw new UrlError('UNSUPPORTED_SCHEME', pageUrl, `Page URL is not http(s): ${pageUrl.slice(0, 200)}`);
  }
  return page;
}

function resolveBase(href: string | null, page: URL): { baseHref: string | null; base: string } {
  if (href !== null) {
    try {
      const resolved = new URL(href.trim(), page);
      if (resolved.protocol === 'http:' || resolved.protocol === 'https:') {
        resolved.hash = '';
        return { baseHref: resolved.href, base: resolved.href };
      }
    } catch {
      // An unusable <base> is ignored, as browsers fall back to the document URL.
    }
  }
  return { baseHref: null, base: page.href };
}

function collapse(text: string | null): string | null {
  if (text === null) return null;
  const out = text.replace(/\s+/g, ' ').trim();
  return out === '' ? null : out;
}

function withoutFragment(raw: string): string {
  const hash = raw.indexOf('#');
  return (hash === -1 ? raw : raw.slice(0, hash)).trim();
}

function hasNofollowRel(rel: string | undefined): boolean {
  return rel !== undefined && relTokens(rel).some((t) => NOFOLLOW_RELS.has(t));
}

function relTokens(rel: string): string[] {
  return rel.toLowerCase().split(/\s+/).filter(Boolean);
}
