// Stage 2 of a page: what the response is and what it adds to the crawl.
// A redirect (its target, credentials dropped), a sitemap (its URLs), an HTML
// page (its links, canonical, duplicate verdict), the campaign's handler,
// and the final outcome as a closed union. Takes the response and returns
// plain data; what needs Redis or the handler comes in as `deps`.
import type { FetchResult } from '../../src/http/http-client';
import type { HookRun } from '../../src/handlers/runner';
import { decodeBody, isHtml } from '../../src/parse/decode';
import { extractLinks, type ExtractedPage } from '../../src/parse/links';
import type { FrontierEntry } from '../../src/redis/frontier';
import { contentHashOf, type IndexEntry } from '../../src/storage/index-writer';
import { simhash64, simhashToHex } from '../../src/dedup/simhash';
import { normalizeUrl } from '../../src/url/normalize';
import { redirectTargetOf, sitemapCandidatesOf, type Candidate } from '../discovery';
import { OUTCOME, PAGE_CODE, httpCode, type Counted } from './outcome';

/** Pages with fewer words get the exact check only: short texts share SimHashes by chance. */
export const MIN_SIMHASH_WORDS = 50;
/** Longest link the normaliser hands to the trap rules (beyond it a link only counts as invalid). */
export const OVERLONG_LINK_CHARS = 256 * 1024;

export type Hook = HookRun & { filter?: (url: string) => boolean };

export interface ClassifyInput {
  entry: FrontierEntry;
  response: FetchResult;
  nonHtml: 'store' | 'skip';
  dedup: 'off' | 'exact' | 'near';
  maxRedirects: number;
  /** budgets.maxLinksPerPage: links taken from one page; the rest are counted in the index line. */
  maxLinks: number;
  /** content.maxParseMs: the time limit of one page's link extraction. */
  maxParseMs: number;
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
      verdict: Verdict;
    };

export async function classifyStage(input: ClassifyInput, deps: ClassifyDeps): Promise<Classified> {
  const { entry, response: res } = input;
  const kind = entry.kind ?? 'page';
  if (res.status === 304 && input.lastCapture) return { kind: 'not-modified' };
  const contentType = res.headers['content-type'] ?? null;
  const common: Partial<IndexEntry> = {
    status: res.status,
    contentType,
    bytes: res.body.length,
    contentHash: contentHashOf(res.body),
    fetchedAt: new Date(res.startedAt).toISOString(),
    fetchMs: res.endedAt - res.startedAt,
    truncated: res.truncated,
    ...(entry.kind && entry.kind !== 'page' ? { kind: entry.kind } : {}),
  };
  const ok = res.status >= 200 && res.status < 300;
  const html = isHtml(contentType);
  let decoded: string | undefined;
  const text = () => (decoded ??= decodeBody(res.body, contentType).text);

  // Non-HTML bodies are never parsed for links; by policy they are stored or only indexed.
  if (ok && !html && kind === 'page' && input.nonHtml === 'skip') return { kind: 'skipped-content-type', common };

  const isSitemap = kind === 'sitemap' || kind === 'sitemap-child';
  let candidates: Candidate[] = [];
  let canonical: string | null | undefined;
  let duplicateOf: IndexEntry['duplicateOf'];
  let contentChecked = false;
  let simhash: string | null = null;
  let sitemap: NonNullable<IndexEntry['sitemap']> | undefined;
  let sitemapHints: { url: string; lastmod?: string; changefreq?: string }[] = [];
  let parseTimeout: ExtractedPage['timeout'];
  let linksDropped = 0;
  // Each hop is its own entry; a chain longer than fetch.maxRedirects ends here, typed.
  const hops = (entry.redirects ?? 0) + 1;
  const redirect = res.stoppedRedirect ? redirectOf(res.stoppedRedirect.to, entry.url) : null;
  const tooManyRedirects = redirect !== null && hops > input.maxRedirects;
  if (redirect && !tooManyRedirects) {
    // A redirect is not a link hop: the target keeps the depth (and the entry's kind).
    candidates = redirect.target === null ? [] : [{ url: redirect.target, depth: entry.depth, kind: entry.kind, redirects: hops, label: entry.label }];
  } else if (redirect) {
    // The 3xx is archived; its target is not followed.
  } else if (isSitemap) {
    if (ok) {
      const listed = sitemapCandidatesOf(res.body, res.finalUrl, contentType, kind, entry.depth, res.truncated !== null);
      candidates = listed.candidates;
      sitemap = listed.summary;
      sitemapHints = listed.hints;
    }
  } else if (ok && html) {
    // Overlong links are kept past the normaliser so the trap rules reject them with a reason on record.
    // Linear in the body and bounded in time (src/parse/links.ts): a page past
    // the limit keeps the links found until then and is recorded parse-timeout.
    const page = extractLinks(text(), res.finalUrl, {
      withText: input.dedup === 'near' || input.revisit,
      maxLength: OVERLONG_LINK_CHARS,
      maxLinks: input.maxLinks,
      maxParseMs: input.maxParseMs,
    });
    parseTimeout = page.timeout;
    linksDropped = page.linksDropped;
    canonical = page.canonical;
    // What tells a revisit's boilerplate churn from a change (src/revisit/adapt.ts).
    if (input.revisit && page.text && page.text.split(' ').length >= MIN_SIMHASH_WORDS) simhash = simhashToHex(simhash64(page.text));
    duplicateOf = await deps.checkDuplicate(common.contentHash!, page.text);
    contentChecked = input.dedup !== 'off';
    // A duplicate's links are followed like any page's: mirrors and shared
    // templates must not cost coverage, and the seen-sets make links
    // already known free (docs/crawling-rules.md).
    if (!page.metaRobots.nofollow) candidates = page.links.filter((l) => !l.nofollow).map((l) => ({ url: l.url, depth: entry.depth + 1 }));
  }

  // The campaign's handler: on every 2xx response of a page entry that is
  // stored (HTML or not; redirects, errors and sitemaps never reach it),
  // after the fetch and before the commit (docs/handlers.md).
  let hook: Hook | null = null;
  if (input.handler && ok && kind === 'page' && !redirect) {
    hook = await deps.runHandler(text());
    if (hook?.ok) candidates = withHookLinks(candidates, hook, entry.depth);
  }

  const verdict = finalVerdict({
    redirect: redirect === null ? null : tooManyRedirects ? 'too-many' : 'followed',
    handlerFailed: hook !== null && !hook.ok,
    sitemap: isSitemap,
    status: res.status,
    duplicate: duplicateOf !== undefined,
    parseTimedOut: parseTimeout !== undefined,
  });
  if (verdict.outcome === OUTCOME.parseTimeout) verdict.error = { ...parseTimeout! };
  if (verdict.outcome === OUTCOME.httpError) verdict.error = { code: httpCode(res.status), message: `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}` };
  if (tooManyRedirects) {
    const message = `redirect number ${hops} (to ${redirect.shown}); fetch.maxRedirects is ${input.maxRedirects}`;
    verdict.error = { code: PAGE_CODE.tooManyRedirects, message };
  }
  if (hook && !hook.ok) verdict.error = { code: PAGE_CODE.handlerError, message: hook.message };
  return {
    kind: 'page',
    common,
    ok,
    candidates,
    canonical,
    duplicateOf,
    contentChecked,
    simhash,
    sitemap,
    sitemapHints,
    hook,
    ...(redirect ? { redirectTo: redirect.shown } : {}),
    linksDropped,
    verdict,
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
export function withHookLinks(candidates: Candidate[], hook: Hook & { ok: true }, depth: number): Candidate[] {
  const filter = hook.filter;
  const own = hook.output.skipDefaultLinks ? [] : filter ? candidates.filter((c) => filter(c.url)) : candidates;
  const added: Candidate[] = [];
  for (const l of hook.output.links) {
    try {
      added.push({ url: normalizeUrl(l.url), depth: depth + 1, label: l.label });
    } catch {
      /* not a URL the crawler can fetch */
    }
  }
  return [...added, ...own];
}

/** What decides a response's outcome. */
export interface ResponseFacts {
  /** The response was a redirect: followed (its target queued), or one hop past fetch.maxRedirects. */
  redirect: 'followed' | 'too-many' | null;
  handlerFailed: boolean;
  /** The entry is a sitemap: a request, not a page. */
  sitemap: boolean;
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
  return { outcome, counted: f.sitemap ? 'skipped' : countedOf(outcome) };
}

/** The first that applies wins: a failure, then what the response was, then what its body was. */
function responseOutcome(f: ResponseFacts): ResponseOutcome {
  if (f.redirect === 'too-many' || f.handlerFailed) return OUTCOME.error;
  if (f.redirect === 'followed') return OUTCOME.redirect;
  if (f.sitemap) return OUTCOME.sitemap;
  if (f.status >= 400) return OUTCOME.httpError;
  if (f.parseTimedOut) return OUTCOME.parseTimeout;
  if (f.duplicate) return OUTCOME.duplicate;
  return OUTCOME.fetched;
}

function countedOf(outcome: ResponseOutcome): Counted {
  switch (outcome) {
    case OUTCOME.error:
    case OUTCOME.httpError:
      return 'failed';
    case OUTCOME.sitemap:
      return 'skipped';
    // parse-timeout: fetched and stored; only its links may be incomplete.
    case OUTCOME.redirect:
    case OUTCOME.duplicate:
    case OUTCOME.fetched:
    case OUTCOME.parseTimeout:
      return 'fetched';
  }
}
