// Link extraction from fetched HTML: outgoing links (normalised, so the
// frontier can dedupe them directly), plus the page-level signals that decide
// what the crawler may do with them (<base>, canonical, meta robots).
import * as cheerio from 'cheerio';
import { normalizeUrl, type NormalizeOptions } from '../url/normalize';
import { UrlError } from '../url/url-error';

export interface ExtractOptions extends NormalizeOptions {
  /** Also report iframe[src] and frame[src] as links (default true). */
  includeFrames?: boolean;
  /** Also return the page's visible text (for near-duplicate detection). */
  withText?: boolean;
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
  /** Normalised, de-duplicated, in document order of first occurrence. */
  links: ExtractedLink[];
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
}

/** Minimal structural view of a cheerio element, to avoid a domhandler dependency. */
interface El {
  tagName: string;
  attribs: Record<string, string>;
  namespace?: string;
}

const HTML_NS = 'http://www.w3.org/1999/xhtml';
const NOFOLLOW_RELS = new Set(['nofollow', 'ugc', 'sponsored']);

/**
 * Extract links and page signals. Throws UrlError only when `pageUrl` itself
 * is not an http(s) URL; any HTML, however malformed, yields a result.
 */
export function extractLinks(html: string, pageUrl: string, opts: ExtractOptions = {}): ExtractedPage {
  const page = parsePageUrl(pageUrl);
  // parse5 (cheerio's default HTML parser) builds the same tree a browser
  // would, so malformed markup and <base> placement behave as in a browser.
  // Scripting is off because the crawler does not run scripts: links inside
  // <noscript> are real links for us.
  const $ = cheerio.load(html, { scriptingEnabled: false });

  const { baseHref, base } = resolveBase($, page);
  const metaRobots = readMetaRobots($);

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

  const selector = opts.includeFrames === false ? 'a[href], area[href]' : 'a[href], area[href], iframe[src], frame[src]';
  const links: ExtractedLink[] = [];
  const indexByUrl = new Map<string, number>();
  let invalid = 0;
  for (const el of $(selector).toArray() as El[]) {
    const tag = el.tagName.toLowerCase();
    const isAnchor = tag === 'a' || tag === 'area';
    const url = normalize(isAnchor ? el.attribs.href : el.attribs.src);
    if (url === null) {
      invalid++;
      continue;
    }
    const nofollow = metaRobots.nofollow || (isAnchor && hasNofollowRel(el.attribs.rel));
    const seen = indexByUrl.get(url);
    if (seen === undefined) {
      indexByUrl.set(url, links.length);
      links.push({ url, nofollow, tag });
    } else if (!nofollow) {
      // One followable occurrence is enough to follow the URL.
      links[seen].nofollow = false;
    }
  }

  const result: ExtractedPage = { links, invalid, baseHref, canonical: readCanonical($, normalize), metaRobots, title: readTitle($) };
  if (opts.withText) {
    // Last, because it mutates the tree: <noscript> links were real links above.
    $('script, style, noscript, template').remove();
    result.text = $('body').text().replace(/\s+/g, ' ').trim();
  }
  return result;
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

// Browsers use the first <base> that has an href, wherever it sits, for
// every relative URL in the document, including those that precede it.
function resolveBase($: cheerio.CheerioAPI, page: URL): { baseHref: string | null; base: string } {
  const el = $('base[href]').toArray()[0] as El | undefined;
  if (el) {
    try {
      const resolved = new URL(el.attribs.href.trim(), page);
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

function readMetaRobots($: cheerio.CheerioAPI): { noindex: boolean; nofollow: boolean } {
  const robots = { noindex: false, nofollow: false };
  for (const el of $('meta[name][content]').toArray() as El[]) {
    if (el.attribs.name.trim().toLowerCase() !== 'robots') continue;
    // Several robots metas combine: the most restrictive directive wins.
    for (const token of el.attribs.content.toLowerCase().split(/[\s,]+/)) {
      if (token === 'noindex' || token === 'none') robots.noindex = true;
      if (token === 'nofollow' || token === 'none') robots.nofollow = true;
    }
  }
  return robots;
}

function readCanonical($: cheerio.CheerioAPI, normalize: (raw: string) => string | null): string | null {
  for (const el of $('link[rel][href]').toArray() as El[]) {
    if (relTokens(el.attribs.rel).includes('canonical')) return normalize(el.attribs.href);
  }
  return null;
}

function readTitle($: cheerio.CheerioAPI): string | null {
  // Skip <svg><title>, which is a tooltip, not the document title.
  const title = $('title')
    .filter((_i, el) => el.namespace === undefined || el.namespace === HTML_NS)
    .first();
  if (title.length === 0) return null;
  const text = title.text().replace(/\s+/g, ' ').trim();
  return text === '' ? null : text;
}

function hasNofollowRel(rel: string | undefined): boolean {
  return rel !== undefined && relTokens(rel).some((t) => NOFOLLOW_RELS.has(t));
}

function relTokens(rel: string): string[] {
  return rel.toLowerCase().split(/\s+/).filter(Boolean);
}
