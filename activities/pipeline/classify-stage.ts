// Stage 2 of a page: what the response is and what it adds to the crawl.
// A redirect (its target, credentials dropped), a sitemap (its URLs), an HTML
// page (its links, canonical, duplicate verdict), the campaign's handler,
// and the final outcome as a closed union. Takes the response and returns
// plain data; what needs Redis or the handler comes in as `deps`.
import type { PageResponse, RenderedDocument } from '../../src/browser/page-fetcher';
import { isHtml, mediaTypeOf } from '../../src/http/media-type';
import type { HookRun } from '../../src/handlers/runner';
import { decodeBody } from '../../src/parse/decode';
import { extractLinks, type ExtractedPage } from '../../src/parse/links';
import { extractCssUrls } from '../../src/parse/css';
import { isFeedContentType, looksLikeFeed, parseFeed } from '../../src/parse/feeds';
import { appendHop, impliedHops } from '../../src/url/hop-path';
import type { EntryKind, FrontierEntry } from '../../src/redis/frontier';
import { contentHashOf, type IndexEntry } from '../../src/storage/index-writer';
import { hasWords, simhash64, simhashToHex } from '../../src/dedup/simhash';
import { normalizeUrl } from '../../src/url/normalize';
import { embedCounted } from '../../src/stats/counters';
import { redirectTargetOf, sitemapCandidatesOf, type Candidate } from '../discovery';
import { behaviorLinks, frameLinks } from './frame-links';
import { OUTCOME, PAGE_CODE, httpCode, type Counted } from './outcome';

/** Pages with fewer words get the exact check only: short texts share SimHashes by chance. */
export const MIN_SIMHASH_WORDS = 50;
/** Longest link the normaliser hands to the trap rules (beyond it a link only counts as invalid). */
export const OVERLONG_LINK_CHARS = 256 * 1024;

export type Hook = HookRun & { filter?: (url: string) => boolean };

export interface ClassifyInput {
  entry: FrontierEntry;
  response: PageResponse;
  nonHtml: 'store' | 'skip';
  dedup: 'off' | 'exact' | 'near';
  maxRedirects: number;
  /** budgets.maxLinksPerPage: links taken from one page; the rest are counted in the index line. */
  maxLinks: number;
  /** content.maxParseMs: the time limit of one page's link extraction. */
  maxParseMs: number;
  /** requisites: 'on' fetches each page's (and stylesheet's) requisites as embeds. */
  requisites: 'on' | 'off';
  /** budgets.maxEmbedsPerPage: requisites taken from one page or stylesheet; the rest are counted in the index line. */
  maxEmbeds: number;
  /** The campaign has a handler (it runs on 2xx page responses). */
  handler: boolean;
  /** Continuous crawling: the page's SimHash is kept to tell boilerplate churn from a change; a 304 may answer a conditional request. */
  revisit: boolean;
  /** The capture a 304 refers to (the last visit's), if any. */
  lastCapture: boolean;
}

export interface ClassifyDeps {
  /** Exact and near-duplicate check against every page of the campaign so far (src/dedup/content-index.ts). */
  checkDuplicate(contentHash: string, text: string | undefined): Promise<IndexEntry['duplicateOf']>;
  /** Runs the handler's hook on the page's text; null when it has none for the page's label. */
  runHandler(text: string): Promise<Hook | null>;
}

/** A final outcome a response can have (a failure without a response, a skip and `gone` come from elsewhere). */
export type ResponseOutcome =
  | typeof OUTCOME.fetched
  | typeof OUTCOME.duplicate
  | typeof OUTCOME.redirect
  | typeof OUTCOME.sitemap
  | typeof OUTCOME.feed
  | typeof OUTCOME.httpError
  | typeof OUTCOME.error
  | typeof OUTCOME.parseTimeout;

export interface Verdict {
  outcome: ResponseOutcome;
  counted: Counted;
  error?: { code: string; message: string };
}

export type Classified =
  /** Not modified since the capture the conditional request named: stored as a revisit record referring to it. */
  | { kind: 'not-modified' }
  /** A non-HTML body the campaign does not store: indexed only. */
  | { kind: 'skipped-content-type'; common: Partial<IndexEntry> }
  | {
      kind: 'page';
      common: Partial<IndexEntry>;
      ok: boolean;
      /** URLs the response adds, before depth, scope and trap rules (activities/discovery.ts routeCandidates). */
      candidates: Candidate[];
      canonical?: string | null;
      duplicateOf?: IndexEntry['duplicateOf'];
      /** The content index looked at this body: its exact verdict decides who stores the payload. */
      contentChecked: boolean;
      simhash: string | null;
      sitemap?: NonNullable<IndexEntry['sitemap']>;
      /** What the sitemap says of how often its pages change (revisit campaigns). */
      sitemapHints: { url: string; lastmod?: string; changefreq?: string }[];
      hook: Hook | null;
      /** For a redirect: where it pointed, without credentials. */
      redirectTo?: string;
      /** Links of the page past budgets.maxLinksPerPage, not taken (the index line counts them with those routing drops). */
      linksDropped: number;
      /** Requisites of the page or stylesheet past budgets.maxEmbedsPerPage, not taken. */
      embedsDropped: number;
      /** For a feed (or a page that turned out to be one): what it listed. */
      feed?: NonNullable<IndexEntry['feed']>;
      verdict: Verdict;
    };

export async function classifyStage(input: ClassifyInput, deps: ClassifyDeps): Promise<Classified> {
  const { entry, response: res } = input;
  const kind = entry.kind ?? 'page';
  if (res.status === 304 && input.lastCapture) return { kind: 'not-modified' };
  const contentType = res.headers['content-type'] ?? null;
  const common = commonFields(entry, res, contentType);
  const ok = res.status >= 200 && res.status < 300;
  const html = isHtml(contentType);
  // A rendered page (render: browser) is read as the browser left it: its
  // links, its text and the handler's input are the rendered DOM's, while
  // the body (hashed in `common`, stored as sent) stays the server's.
  const rendered = res.rendered?.html ?? null;
  let decoded: string | undefined;
  const text = () => (decoded ??= rendered ?? decodeBody(res.body, contentType).text);

  // Non-HTML bodies are never parsed for links; by policy they are stored or only indexed.
  if (ok && !html && kind === 'page' && input.nonHtml === 'skip') return { kind: 'skipped-content-type', common };

  const isSitemap = kind === 'sitemap' || kind === 'sitemap-child';
  const hops = entry.hops ?? impliedHops(entry.depth);
  // Each hop is its own entry; a chain longer than fetch.maxRedirects ends here, typed.
  const redirectHops = (entry.redirects ?? 0) + 1;
  const redirect = res.stoppedRedirect ? redirectOf(res.stoppedRedirect.to, entry.url) : null;
  const tooManyRedirects = redirect !== null && redirectHops > input.maxRedirects;
  let found: Found = { candidates: [] };
  if (redirect && !tooManyRedirects) {
    // A redirect is not a link hop: the target keeps the depth (and the entry's kind: an embed's target is an embed).
    if (redirect.target !== null)
      found.candidates = [{ url: redirect.target, depth: entry.depth, kind: entry.kind, redirects: redirectHops, label: entry.label, hops: appendHop(hops, 'R') }];
  } else if (!redirect && ok) {
    // (A redirect past the limit is archived; its target is not followed.)
    found = await discover({ input, deps, kind, html, contentType, hops, rendered, text, contentHash: common.contentHash! });
  }
  const { candidates: discovered, duplicateOf, parseTimeout } = found;
  // What a reader of the archive sees the page as (the WACZ's page lists: src/storage/wacz.ts); a rendered page's own.
  if (found.title) common.title = found.title.slice(0, MAX_TITLE_CHARS);
  let candidates = discovered;

  // The campaign's handler: on every 2xx response of a page entry that is
  // stored (HTML or not; redirects, errors and sitemaps never reach it),
  // after the fetch and before the commit (docs/handlers.md).
  let hook: Hook | null = null;
  if (input.handler && ok && kind === 'page' && !redirect) {
    hook = await deps.runHandler(text());
    if (hook?.ok) candidates = withHookLinks(candidates, hook, entry.depth, hops);
  }

  const tooMany = tooManyRedirects ? { hops: redirectHops, shown: redirect.shown, max: input.maxRedirects } : null;
  const verdict = pageVerdict({ res, kind, isSitemap, redirect: redirect !== null, tooMany, hook, duplicate: duplicateOf !== undefined, parseTimeout });
  return {
    kind: 'page',
    common,
    ok,
    candidates,
    canonical: found.canonical,
    duplicateOf,
    contentChecked: found.contentChecked ?? false,
    simhash: found.simhash ?? null,
    sitemap: found.sitemap,
    sitemapHints: found.sitemapHints ?? [],
    hook,
    ...(redirect ? { redirectTo: redirect.shown } : {}),
    linksDropped: found.linksDropped ?? 0,
    embedsDropped: found.embedsDropped ?? 0,
    ...(found.feed ? { feed: found.feed } : {}),
    verdict,
  };
}

/** The index fields of any response: status, type, size, hash, timing (and what the browser did, for a rendered page). */
function commonFields(entry: FrontierEntry, res: PageResponse, contentType: string | null): Partial<IndexEntry> {
  return {
    status: res.status,
    contentType,
    bytes: res.body.length,
    contentHash: contentHashOf(res.body),
    fetchedAt: new Date(res.startedAt).toISOString(),
    fetchMs: res.endedAt - res.startedAt,
    truncated: res.truncated,
    ...(entry.kind && entry.kind !== 'page' ? { kind: entry.kind } : {}),
    ...(res.rendered ? { render: renderFields(res.rendered) } : {}),
  };
}

/** The response's final outcome, and its error: a parse timeout, an HTTP error, a redirect past fetch.maxRedirects, the handler's failure (the last one named wins). */
function pageVerdict(o: {
  res: PageResponse;
  kind: EntryKind;
  isSitemap: boolean;
  redirect: boolean;
  tooMany: { hops: number; shown: string; max: number } | null;
  hook: Hook | null;
  duplicate: boolean;
  parseTimeout: Found['parseTimeout'];
}): Verdict {
  const { res, hook, tooMany, parseTimeout } = o;
  const verdict = finalVerdict({
    redirect: !o.redirect ? null : tooMany ? 'too-many' : 'followed',
    handlerFailed: hook !== null && !hook.ok,
    sitemap: o.isSitemap,
    feed: o.kind === 'feed',
    embed: o.kind === 'embed',
    status: res.status,
    duplicate: o.duplicate,
    parseTimedOut: parseTimeout !== undefined,
  });
  if (verdict.outcome === OUTCOME.parseTimeout) verdict.error = { ...parseTimeout! };
  if (verdict.outcome === OUTCOME.httpError) verdict.error = { code: httpCode(res.status), message: `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}` };
  if (tooMany) verdict.error = { code: PAGE_CODE.tooManyRedirects, message: `redirect number ${tooMany.hops} (to ${tooMany.shown}); fetch.maxRedirects is ${tooMany.max}` };
  if (hook && !hook.ok) verdict.error = { code: hook.code ?? PAGE_CODE.handlerError, message: hook.message };
  return verdict;
}

/** What a 2xx response that is not a redirect adds to the crawl, by what it is. */
interface Found {
  /** URLs the response adds, before depth, scope and trap rules. */
  candidates: Candidate[];
  /** An HTML page's <title> (the rendered DOM's, for a rendered page). */
  title?: string | null;
  canonical?: string | null;
  duplicateOf?: IndexEntry['duplicateOf'];
  contentChecked?: boolean;
  simhash?: string | null;
  sitemap?: NonNullable<IndexEntry['sitemap']>;
  sitemapHints?: { url: string; lastmod?: string; changefreq?: string }[];
  feed?: NonNullable<IndexEntry['feed']>;
  parseTimeout?: ExtractedPage['timeout'];
  linksDropped?: number;
  embedsDropped?: number;
}

/** What discover reads: the stage's input and deps, and what classifyStage already knows of the response. */
interface Seen {
  input: ClassifyInput;
  deps: ClassifyDeps;
  kind: EntryKind;
  html: boolean;
  contentType: string | null;
  /** The entry's hop path. */
  hops: string;
  /** The rendered DOM (render: browser), else null. */
  rendered: string | null;
  /** The body decoded once (or the rendered DOM). */
  text: () => string;
  contentHash: string;
}

/** A sitemap's URLs, a feed's items, a stylesheet's requisites, an HTML page's links and requisites. */
async function discover(c: Seen): Promise<Found> {
  const { input, kind, contentType } = c;
  const { entry, response: res } = input;
  switch (kind) {
    case 'sitemap':
    case 'sitemap-child': {
      const listed = sitemapCandidatesOf(res.body, res.finalUrl, contentType, kind, entry.depth, res.truncated !== null);
      return { candidates: listed.candidates.map((x) => ({ ...x, hops: appendHop(c.hops, 'L') })), sitemap: listed.summary, sitemapHints: listed.hints };
    }
    case 'feed':
      return feedLinks(c);
    case 'embed':
      // An embed is stored, never parsed for links; a stylesheet's own
      // requisites (its @imports, fonts, background images) are embeds one
      // hop further, relative to the stylesheet.
      if (input.requisites === 'on' && isStylesheet(contentType, res.finalUrl)) {
        const css = extractCssUrls(c.text(), res.finalUrl, { maxUrls: input.maxEmbeds, maxLength: OVERLONG_LINK_CHARS });
        return { candidates: embedsOf(entry, c.hops, css.urls), embedsDropped: css.dropped };
      }
      return { candidates: [] };
    case 'page':
      if (c.html) return readHtmlPage(c);
      // A feed linked as a page (or a seed): its items are followed as a page's links would be.
      if (isFeedContentType(contentType) || looksLikeFeed(res.body, contentType)) return feedLinks(c);
      return { candidates: [] };
  }
}

/** An HTML page's links, requisites and announced feeds, its canonical and its duplicate verdict. */
async function readHtmlPage(c: Seen): Promise<Found> {
  const { input, hops, rendered } = c;
  const { entry, response: res } = input;
  // Overlong links are kept past the normaliser so the trap rules reject them with a reason on record.
  // Linear in the body and bounded in time (src/parse/links.ts): a page past
  // the limit keeps the links found until then and is recorded parse-timeout.
  const page = extractLinks(c.text(), rendered !== null ? res.rendered!.url : res.finalUrl, {
    withText: input.dedup === 'near' || input.revisit,
    maxLength: OVERLONG_LINK_CHARS,
    maxLinks: input.maxLinks,
    maxParseMs: input.maxParseMs,
    requisites: input.requisites === 'on',
    maxRequisites: input.maxEmbeds,
  });
  // What tells a revisit's boilerplate churn from a change (src/revisit/adapt.ts).
  const simhash = input.revisit && page.text && hasWords(page.text, MIN_SIMHASH_WORDS) ? simhashToHex(simhash64(page.text)) : null;
  // A client-rendered site serves one shell for every route: what tells its pages apart is what they render to.
  const duplicateOf = await c.deps.checkDuplicate(rendered !== null ? contentHashOf(Buffer.from(rendered)) : c.contentHash, page.text);
  // A rendered page's other frames: their links and requisites, each read against the frame's own URL.
  const framed = frameLinks(rendered !== null ? (res.rendered!.frames ?? []) : [], {
    maxLinks: input.maxLinks - page.links.length,
    maxParseMs: input.maxParseMs,
    requisites: input.requisites === 'on',
    maxRequisites: input.maxEmbeds - page.requisites.length,
    maxLength: OVERLONG_LINK_CHARS,
    known: new Set(page.links.map((l) => l.url)),
  });
  // Links the browser behaviors found (a tab's panel the next tab replaced, a click's attempt to leave the page).
  const known = new Set([...page.links.map((l) => l.url), ...framed.links]);
  const behaved = behaviorLinks(rendered !== null ? (res.rendered!.behaviorLinks ?? []) : [], {
    maxLinks: Math.max(0, input.maxLinks - known.size),
    maxLength: OVERLONG_LINK_CHARS,
    known,
  });
  // Requisites first: the page is only whole with them, whatever it links
  // to (nofollow is about links, not what the page needs to display).
  const candidates = embedsOf(entry, hops, [...page.requisites.map((r) => r.url), ...framed.requisites]);
  // A duplicate's links are followed like any page's: mirrors and shared
  // templates must not cost coverage, and the seen-sets make links
  // already known free (docs/crawling-rules.md).
  if (!page.metaRobots.nofollow) {
    const linkHops = appendHop(hops, 'L');
    for (const l of page.links) if (!l.nofollow) candidates.push({ url: l.url, depth: entry.depth + 1, hops: linkHops });
    for (const url of framed.links) candidates.push({ url, depth: entry.depth + 1, hops: linkHops });
    for (const url of behaved.links) candidates.push({ url, depth: entry.depth + 1, hops: linkHops });
    // Feeds the page announces (<link rel=alternate type=…rss+xml…>): listed like sitemaps, one per URL.
    for (const f of page.feeds) candidates.push({ url: f, depth: entry.depth, kind: 'feed', hops: linkHops });
  }
  return {
    candidates,
    canonical: page.canonical,
    title: page.title,
    duplicateOf,
    // The verdict settles who stores a payload only when it is about that payload (the body's hash).
    contentChecked: input.dedup !== 'off' && rendered === null,
    simhash,
    parseTimeout: page.timeout ?? framed.timeout,
    linksDropped: page.linksDropped + framed.linksDropped + behaved.dropped,
    embedsDropped: page.requisitesDropped + framed.embedsDropped,
  };
}

/** A feed's items: links one hop below it, under the same scope and budgets as a page's. */
function feedLinks(c: Seen): Found {
  const { entry, response: res } = c.input;
  const parsed = parseFeed(res.body, { url: res.finalUrl, contentType: c.contentType, maxLinks: c.input.maxLinks });
  const hops = appendHop(c.hops, 'L');
  return {
    candidates: parsed.links.map((url) => ({ url, depth: entry.depth + 1, hops })),
    feed: { kind: parsed.kind, links: parsed.links.length, added: 0, truncated: parsed.truncated, errors: parsed.errors.slice(0, 5) },
  };
}

/** Requisites as embed candidates: at the page's depth (embeds are not link hops), one E hop further. */
function embedsOf(entry: FrontierEntry, hops: string, urls: string[]): Candidate[] {
  const embedHops = appendHop(hops, 'E');
  return urls.map((url) => ({ url, depth: entry.depth, kind: 'embed', hops: embedHops }));
}

/** A page's title in its index line is cut here: a title is a line of text, not a page of it. */
const MAX_TITLE_CHARS = 300;

/** What the index line says of a rendered page. */
function renderFields(r: RenderedDocument): NonNullable<IndexEntry['render']> {
  return {
    done: r.done,
    ms: r.ms,
    requests: r.requests,
    ...(r.error ? { error: r.error } : {}),
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.scroll ? { scroll: r.scroll } : {}),
    ...(r.behaviors ? { behaviors: r.behaviors } : {}),
    ...(r.textRecord ? { text: r.textRecord } : {}),
    ...(r.frames?.length ? { frames: r.frames.length } : {}),
  };
}

/**
 * A Location as the crawl sees it: the frontier URL it leads to (null: not
 * crawlable, or the URL itself) and how the index shows it. Both without
 * credentials: a `user:pass@` a server put in a Location must never reach
 * the index (redirectTo, an error message) nor the frontier.
 */
function redirectOf(to: string, from: string): { target: string | null; shown: string } {
  const target = redirectTargetOf(to, from, OVERLONG_LINK_CHARS);
  // Pointing back at itself: shown normalised. Not crawlable (mailto:, ftp:): as sent, unless it names credentials.
  return { target, shown: target ?? redirectTargetOf(to, '', OVERLONG_LINK_CHARS) ?? uncrawlableShown(to) };
}

function uncrawlableShown(to: string): string {
  try {
    const u = new URL(to);
    return u.username || u.password ? `${u.protocol}(credentials removed)` : to;
  } catch {
    return to;
  }
}

/**
 * The page's links after its handler: the hook's own links first (a URL the
 * page also links to keeps the hook's label: the first of a URL is the one
 * enqueued), then the page's, narrowed by filterLink or dropped by
 * skipDefaultLinks. Through routeCandidates like the page's own links:
 * depth, traps, scope, seen-sets; robots, address policy and politeness
 * where the target is fetched.
 */
export function withHookLinks(candidates: Candidate[], hook: Hook & { ok: true }, depth: number, hops = ''): Candidate[] {
  const filter = hook.filter;
  // Requisites are the page's, not links: a handler's link rules leave them be.
  const embeds = candidates.filter((c) => c.kind === 'embed');
  const links = candidates.filter((c) => c.kind !== 'embed');
  const own = hook.output.skipDefaultLinks ? [] : filter ? links.filter((c) => filter(c.url)) : links;
  const added: Candidate[] = [];
  const linkHops = appendHop(hops, 'L');
  for (const l of hook.output.links) {
    try {
      added.push({ url: normalizeUrl(l.url), depth: depth + 1, label: l.label, hops: linkHops });
    } catch {
      /* not a URL the crawler can fetch */
    }
  }
  return [...embeds, ...added, ...own];
}

/** A stylesheet, by its type, or by its extension when the server names none (or a generic one). */
export function isStylesheet(contentType: string | null, url: string): boolean {
  const type = mediaTypeOf(contentType);
  if (type === 'text/css') return true;
  if (type !== '' && type !== 'text/plain' && type !== 'application/octet-stream') return false;
  try {
    return new URL(url).pathname.toLowerCase().endsWith('.css');
  } catch {
    return false;
  }
}

/** What decides a response's outcome. */
export interface ResponseFacts {
  /** The response was a redirect: followed (its target queued), or one hop past fetch.maxRedirects. */
  redirect: 'followed' | 'too-many' | null;
  handlerFailed: boolean;
  /** The entry is a sitemap: a request, not a page. */
  sitemap: boolean;
  /** The entry is a feed found by a page's <link rel=alternate>: a request, not a page, as a sitemap. */
  feed?: boolean;
  /** The entry is an embed (a page requisite): counted apart from pages. */
  embed?: boolean;
  status: number;
  duplicate: boolean;
  /** The page's link extraction outlasted content.maxParseMs. */
  parseTimedOut?: boolean;
}

/**
 * A response's outcome and how it counts. A final 4xx, or a 5xx/429 that
 * outlasted its retries, is the URL failing, not a page: typed like any
 * other failure, though the response stays in the WARC as evidence. A
 * sitemap probe that 404s is not a failure of the crawl (most hosts have no
 * /sitemap.xml), so sitemaps keep their outcome, and count neither as pages
 * nor against page budgets.
 */
export function finalVerdict(f: ResponseFacts): Verdict {
  const outcome = responseOutcome(f);
  if (f.sitemap || f.feed) return { outcome, counted: 'skipped' };
  const counted = countedOf(outcome);
  return { outcome, counted: f.embed ? embedCounted(counted) : counted };
}

/** The first that applies wins: a failure, then what the response was, then what its body was. */
function responseOutcome(f: ResponseFacts): ResponseOutcome {
  if (f.redirect === 'too-many' || f.handlerFailed) return OUTCOME.error;
  if (f.redirect === 'followed') return OUTCOME.redirect;
  if (f.sitemap) return OUTCOME.sitemap;
  if (f.feed) return OUTCOME.feed;
  if (f.status >= 400) return OUTCOME.httpError;
  if (f.parseTimedOut) return OUTCOME.parseTimeout;
  if (f.duplicate) return OUTCOME.duplicate;
  return OUTCOME.fetched;
}

function countedOf(outcome: ResponseOutcome): 'fetched' | 'failed' | 'skipped' {
  switch (outcome) {
    case OUTCOME.error:
    case OUTCOME.httpError:
      return 'failed';
    case OUTCOME.sitemap:
    case OUTCOME.feed:
      return 'skipped';
    // parse-timeout: fetched and stored; only its links may be incomplete.
    case OUTCOME.redirect:
    case OUTCOME.duplicate:
    case OUTCOME.fetched:
    case OUTCOME.parseTimeout:
      return 'fetched';
  }
}
