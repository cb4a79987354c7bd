// What a fetched response adds to the crawl: outlinks of HTML pages, the
// target of a redirect we did not follow, the URLs a sitemap lists. All of
// it goes through the same gates (scope, depth, spider-trap rules) and the
// same mark-seen-and-enqueue path, so a URL found three ways is fetched once.
import { frontierPriority, type CampaignSettings } from '../src/config/campaign';
import { Frontier, frontierBounds, isListKind, type EnqueueItem, type EntryKind } from '../src/redis/frontier';
import { trailingEmbeds } from '../src/url/hop-path';
import { campaignKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { parseSitemap, sitemapMayList } from '../src/sitemap/sitemap';
import type { IndexEntry } from '../src/storage/index-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey, normalizeUrl } from '../src/url/normalize';
import { trapReason } from '../src/url/traps';
import type { UrlRuleTarget } from '../src/url/url-rules';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { frontierOf } from './frontier-of';

/** Rejected-link samples kept per page in the index: enough to see the pattern, bounded for hostile pages. */
const MAX_REJECTED_SAMPLES = 5;
/** Child sitemaps followed from one sitemap index (sitemaps.org allows 50,000; a host needs far fewer to be covered). */
const MAX_CHILD_SITEMAPS = 100;

export interface Candidate {
  url: string;
  depth: number;
  kind?: EntryKind;
  /** For a redirect target: the hops so far. */
  redirects?: number;
  /** The handler route of the target page (a handler's link, or a redirect from a labelled page). */
  label?: string | null;
  /** How it was reached (src/url/hop-path.ts). */
  hops?: string;
}

export interface Routed {
  /** Same-host items, enqueued atomically with the step's commit. */
  own: EnqueueItem[];
  /** Hosts that got new URLs and nobody consuming them: marked ready for the campaign to dispatch. */
  discoveredHosts: number;
  rejectedLinks?: IndexEntry['rejectedLinks'];
  /** Distinct candidate URLs past `maxLinks`, not routed. */
  linksDropped: number;
}

/**
 * Whether the campaign's page budget is spent (every slot reserved): its
 * last pages are being fetched, and a sitemap fetched now could only list
 * URLs nobody will request.
 */
export async function pageBudgetSpent(redis: RedisLike, campaignKey: string, maxPages: number | null): Promise<boolean> {
  return maxPages !== null && (await redis.scard(campaignKeys(campaignKey).budget)) >= maxPages;
}

/**
 * Embed hops in a row (src/url/hop-path.ts) an embed may be at: outside the
 * crawl's scope two (page → stylesheet → font, Heritrix's maxTransHops); in
 * scope four, so an @import chain of three still gets its fonts. Never more,
 * whatever a stylesheet imports: the chain ends.
 */
export const MAX_EMBED_HOPS_OUT_OF_SCOPE = 2;
export const MAX_EMBED_HOPS_IN_SCOPE = 4;

/**
 * The first `max` distinct URLs of `candidates` in order (repeats of a kept
 * URL stay, for the seen-set to drop), and how many distinct URLs were cut.
 */
export function capCandidates<T extends { url: string }>(candidates: T[], max: number | undefined): { kept: T[]; dropped: number } {
  if (max === undefined || candidates.length <= max) return { kept: candidates, dropped: 0 };
  const kept: T[] = [];
  const keptUrls = new Set<string>();
  const droppedUrls = new Set<string>();
  for (const c of candidates) {
    if (keptUrls.has(c.url)) kept.push(c);
    else if (keptUrls.size < max) {
      keptUrls.add(c.url);
      kept.push(c);
    } else droppedUrls.add(c.url);
  }
  return { kept, dropped: droppedUrls.size };
}

/**
 * Applies the links cap, depth, scope and trap rules to candidates, enqueues
 * other hosts' URLs now within the campaign's frontier bounds (handing
 * hosts that are not consuming their frontier to `wake`) and returns the
 * page's own-host URLs for its commit, which must pass the same bounds
 * (`frontierBounds(settings.budgets)`). `maxLinks`: budgets.maxLinksPerPage
 * for a page's links (its own and its handler's); `ownHostBudgetLeft`: pages
 * the host may still request after this one.
 */
export async function routeCandidates(
  rt: WorkerRuntime,
  campaign: CampaignRuntime,
  ownHost: string,
  referrer: string,
  candidates: Candidate[],
  wake: (hosts: string[]) => Promise<void>,
  opts: { ownHostBudgetLeft?: number; maxLinks?: number } = {},
): Promise<Routed> {
  const s = campaign.settings;
  const capped = await withinCaps(rt, campaign, candidates, opts.maxLinks);
  const { passed, rejected } = screened(campaign, capped.kept);
  const byHost = itemsByHost(passed, await campaign.inScope(passed.map((c) => c.url)), referrer, s);
  let own = byHost.get(ownHost) ?? [];
  byHost.delete(ownHost);
  // A host at its page budget gains nothing from more of its own pages.
  // Short of it, the commit's bound decides: it knows which links are new
  // and how many pages the host has queued.
  if (opts.ownHostBudgetLeft !== undefined && opts.ownHostBudgetLeft <= 0) own = own.filter((i) => isListKind(i.kind) || i.kind === 'embed');
  const bounds = frontierBounds(s.budgets);
  const woken: string[] = [];
  await Promise.all(
    [...byHost].map(async ([host, items]) => {
      // A host whose workflow is consuming its frontier needs no wake: most
      // cross-host links land there, and each wake costs the campaign and the
      // host workflow history events.
      if (Frontier.needsWake(await frontierOf(rt, campaign, host).enqueue(items, bounds))) woken.push(host);
    }),
  );
  if (woken.length > 0) await wake(woken.sort());
  return { own, discoveredHosts: woken.length, rejectedLinks: rejected, linksDropped: capped.dropped };
}

/**
 * The links cap (embeds were capped where they were found, budgets.maxEmbedsPerPage: the links
 * cap is for links), and sitemaps and feeds no more than the host may have, none once the page
 * budget is spent. `dropped`: links the cap cut.
 */
async function withinCaps(rt: WorkerRuntime, campaign: CampaignRuntime, candidates: Candidate[], maxLinks: number | undefined): Promise<{ kept: Candidate[]; dropped: number }> {
  const s = campaign.settings;
  const embeds = candidates.filter((c) => c.kind === 'embed');
  const capped = capCandidates(embeds.length > 0 ? candidates.filter((c) => c.kind !== 'embed') : candidates, maxLinks);
  let kept = embeds.length > 0 ? [...embeds, ...capped.kept] : capped.kept;
  // Sitemaps and feeds do not count against the page budget, but once it is
  // spent they could only list URLs nobody will request.
  if (kept.some((c) => isListKind(c.kind))) {
    const spent = await pageBudgetSpent(rt.deps.redis, campaign.key, s.budgets.maxPages);
    // No more from one index than the host may ever have; the enqueue's bound counts them against the host's earlier ones.
    let maps = 0;
    kept = kept.filter((c) => !isListKind(c.kind) || (!spent && maps++ < s.budgets.maxSitemapsPerHost));
  }
  return { kept, dropped: capped.dropped };
}

/** Depth, embed hops, trap and URL rules: the candidates that pass, and those turned away, counted (with a few samples) for the page's index line. */
function screened(campaign: CampaignRuntime, candidates: Candidate[]): { passed: Candidate[]; rejected: Routed['rejectedLinks'] } {
  const s = campaign.settings;
  const counts: Record<string, number> = {};
  const samples: { code: string; url: string; length: number }[] = [];
  const passed: Candidate[] = [];
  for (const c of candidates) {
    // Embeds are not link hops: depth does not stop them (the page is only whole with them).
    if (s.budgets.maxDepth !== null && c.depth > s.budgets.maxDepth && c.kind !== 'embed') continue;
    if (c.kind === 'embed' && trailingEmbeds(c.hops ?? '') > MAX_EMBED_HOPS_IN_SCOPE) continue;
    // scope.include / scope.exclude, beside the trap rules: turned away links are counted in the page's index line the same way.
    const rejection = trapReason(c.url, s.traps)?.code ?? campaign.urlRules.verdict(c.url, ruleTarget(c.kind, c.hops));
    if (rejection) {
      counts[rejection] = (counts[rejection] ?? 0) + 1;
      if (samples.length < MAX_REJECTED_SAMPLES) samples.push({ code: rejection, url: c.url.slice(0, 200), length: c.url.length });
      continue;
    }
    passed.push(c);
  }
  return { passed, rejected: samples.length > 0 ? { counts, samples } : undefined };
}

/** The candidates in scope (`allowed`, by index) as frontier items, by host. */
function itemsByHost(passed: Candidate[], allowed: boolean[], referrer: string, s: CampaignRuntime['settings']): Map<string, EnqueueItem[]> {
  const byHost = new Map<string, EnqueueItem[]>();
  for (const [i, c] of passed.entries()) {
    // A page's requisites on other hosts (a CDN, a font service) are fetched outside the scope, two embed hops at most.
    if (!allowed[i] && !(c.kind === 'embed' && trailingEmbeds(c.hops ?? '') <= MAX_EMBED_HOPS_OUT_OF_SCOPE)) continue;
    let host: string;
    try {
      host = hostKey(c.url);
    } catch {
      continue;
    }
    const list = byHost.get(host) ?? [];
    list.push({
      url: c.url,
      fp: urlFingerprint(c.url),
      depth: c.depth,
      referrer,
      kind: c.kind,
      priority: frontierPriority(c.url, s),
      ...(c.redirects ? { redirects: c.redirects } : {}),
      ...(c.label ? { label: c.label } : {}),
      ...(c.hops ? { hops: c.hops } : {}),
    });
    byHost.set(host, list);
  }
  return byHost;
}

/**
 * What a candidate is to the URL rules: includes hold links only
 * (src/url/url-rules.ts). A seed's redirects (hops all `R`: http to https,
 * / to /en/) are still the seed, the crawl's entry point.
 */
export function ruleTarget(kind: EntryKind | undefined, hops: string | undefined): UrlRuleTarget {
  if (kind === 'embed') return 'embed';
  if (isListKind(kind)) return 'list';
  return hops !== undefined && /^R+$/.test(hops) ? 'seed' : 'link';
}

/**
 * URLs listed by a fetched sitemap, as candidates: pages one hop below the
 * sitemap, child sitemaps of an index as sitemap entries. Only URLs on the
 * sitemap's own host count (sitemaps.org's rule, minus the path part).
 */
export function sitemapCandidatesOf(
  body: Uint8Array,
  sitemapUrl: string,
  contentType: string | null,
  entryKind: EntryKind,
  depth: number,
  /** The fetch cut the body (its size or time limit). */
  cut = false,
): { candidates: Candidate[]; summary: NonNullable<IndexEntry['sitemap']>; hints: { url: string; lastmod?: string; changefreq?: string }[] } {
  const parsed = parseSitemap(body, { url: sitemapUrl, contentType, incomplete: cut });
  const candidates: Candidate[] = [];
  // What the sitemap says of how often its pages change: a revisit campaign's first intervals (src/revisit/adapt.ts).
  const hints: { url: string; lastmod?: string; changefreq?: string }[] = [];
  const errors = parsed.errors.slice(0, 5);
  let offHost = 0;
  const add = (raw: string, kind: EntryKind, d: number) => {
    let url: string;
    try {
      url = normalizeUrl(raw);
    } catch {
      return;
    }
    if (!sitemapMayList(sitemapUrl, url)) {
      offHost++;
      return;
    }
    candidates.push({ url, depth: d, kind });
    return url;
  };
  for (const u of parsed.urls) {
    const url = add(u.loc, 'page', depth + 1);
    if (url && (u.lastmod || u.changefreq)) hints.push({ url, ...(u.lastmod ? { lastmod: u.lastmod } : {}), ...(u.changefreq ? { changefreq: u.changefreq } : {}) });
  }
  // An index listed by an index is not followed: sitemaps.org forbids nesting, and it bounds the walk.
  if (entryKind === 'sitemap') for (const sm of parsed.sitemaps.slice(0, MAX_CHILD_SITEMAPS)) add(sm, 'sitemap-child', depth);
  if (offHost > 0) errors.push(`${offHost} URL(s) on other hosts ignored`);
  return {
    candidates,
    summary: { kind: parsed.kind, urls: parsed.urls.length, added: 0, sitemaps: parsed.sitemaps.length, truncated: parsed.truncated, errors },
    hints,
  };
}

/**
 * A redirect's target as a frontier URL: normalised as links are (credentials
 * dropped, the host lower-cased and without a trailing dot, tracking
 * parameters stripped, the query sorted), so trap rules, fingerprints and
 * politeness keys see one spelling whether a URL came by link or redirect.
 * When that spelling is the URL that redirected (the server insists on its
 * own order or case), the target is kept as sent, minus credentials and
 * fragment, or the redirect could never be followed. Null: not a crawlable
 * http(s) URL.
 */
export function redirectTargetOf(to: string, from: string, maxLength?: number): string | null {
  let normalized: string;
  try {
    normalized = normalizeUrl(to, undefined, maxLength === undefined ? {} : { maxLength });
  } catch {
    return null;
  }
  if (normalized !== from) return normalized;
  const raw = new URL(to);
  raw.username = '';
  raw.password = '';
  raw.hash = '';
  return raw.href === from ? null : raw.href;
}

/**
 * Sitemap URLs to enqueue for a host once its robots.txt is known: the
 * first budgets.maxSitemapsPerHost distinct ones, robots.txt's in its order,
 * then /sitemap.xml (a robots.txt of 5,000 Sitemap: lines is read no further
 * than needed; the enqueue's bound in Redis holds the host to the same number).
 */
export function sitemapSeeds(s: CampaignSettings, origin: string, robotsSitemaps: readonly string[]): string[] {
  if (s.sitemaps === 'off') return [];
  const max = s.budgets.maxSitemapsPerHost;
  const out = new Set<string>();
  for (const raw of robotsSitemaps) {
    if (out.size >= max) break;
    try {
      const url = normalizeUrl(raw);
      // Sitemaps hosted elsewhere (a CDN) would need that host's politeness and scope; not followed.
      if (sitemapMayList(origin + '/', url)) out.add(url);
    } catch {
      /* a bad Sitemap: line is ignored, like any bad robots.txt line */
    }
  }
  if (s.sitemaps === 'robots+root' && out.size < max) out.add(normalizeUrl(`${origin}/sitemap.xml`));
  return [...out];
}
