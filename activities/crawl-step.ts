import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { isFetchError } from '../src/http/fetch-error';
import type { FetchResult } from '../src/http/http-client';
import { parseRetryAfter } from '../src/http/retry-after';
import { extractLinks } from '../src/parse/links';
import { decodeBody, isHtml } from '../src/parse/decode';
import { reserveBudget } from '../src/redis/campaign-store';
import { Frontier, type EnqueueItem } from '../src/redis/frontier';
import { hostKeys } from '../src/redis/keys';
import { HostClock } from '../src/redis/host-clock';
import { contentHashOf, type IndexEntry } from '../src/storage/index-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { ContentIndex } from '../src/dedup/content-index';
import { simhash64 } from '../src/dedup/simhash';
import { hostKey } from '../src/url/normalize';
import { routeCandidates, sitemapCandidatesOf, type Candidate } from './discovery';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { CrawlStepInput, CrawlStepResult, DoneResult } from './types';

/** Clock waits shorter than this are slept in the step (Temporal timers resolve to about a second). */
const IN_STEP_WAIT_MAX_MS = 1_000;
/** Attempts a URL answered with 429 gets beyond fetch.maxRetries. */
const THROTTLE_EXTRA_ATTEMPTS = 5;
const HEARTBEAT_MS = 3_000;
/** Pages with fewer words get the exact check only: short texts share SimHashes by chance. */
const MIN_SIMHASH_WORDS = 50;
/** Longest link the normaliser hands to the trap rules (beyond it a link only counts as invalid). */
const OVERLONG_LINK_CHARS = 256 * 1024;
/** Outlinks listed in a WARC metadata record. */
const MAX_METADATA_OUTLINKS = 1000;

/**
 * One step of a domain crawl: take the host's next URL, check robots and
 * budget, fetch it under the shared host clock, store the exchange (WARC +
 * index), enqueue its in-scope links and report hosts that got new URLs.
 *
 * Idempotent per URL: the claimed entry is sticky until committed, the seen
 * sets ignore links already enqueued, the budget slot is keyed by the URL
 * fingerprint. A worker dying between storing and committing means the URL
 * is fetched and stored again (see docs/guarantees.md).
 */
export function crawlStepActivity(rt: WorkerRuntime) {
  return async function crawlStep(input: CrawlStepInput): Promise<CrawlStepResult> {
    const ctx = Context.current();
    // The domain's durable sleep before this step: most of the time a crawl spends waiting for politeness.
    if (input.sleptMs) rt.deps.metrics?.recordPolitenessWait(input.sleptMs);
    const campaign = await rt.campaign(input.campaignKey, input.configVersion);
    const s = campaign.settings;
    const frontier = new Frontier(rt.deps.redis, input.campaignKey, input.host);
    const claimed = await frontier.claimStep(input.stepId ?? '');
    if (!claimed) return { kind: 'empty' };
    // This very step already committed (its worker died before the workflow
    // heard back): its URL is done, so claiming would take the next one and
    // the domain would never count this one. Answer what was committed.
    if ('committed' in claimed) return { ...(JSON.parse(claimed.committed) as Omit<DoneResult, 'remaining'>), remaining: claimed.remaining };
    const { member, entry } = claimed;
    const { url } = entry;
    const fp = urlFingerprint(url);
    const out = await rt.outputs.get(s.output.dir, s.campaignId);
    const log = rt.log.child({ campaign: s.campaignId, host: input.host, url });

    const record = async (
      outcome: string,
      counted: 'fetched' | 'failed' | 'skipped',
      details: Partial<IndexEntry> & { requested: boolean; links?: EnqueueItem[]; discoveredHosts?: number },
    ): Promise<CrawlStepResult> => {
      const { requested, links = [], discoveredHosts = 0, ...extra } = details;
      await out.index.append({
        url,
        fp,
        host: input.host,
        campaignId: s.campaignId,
        status: null,
        outcome,
        contentType: null,
        bytes: 0,
        contentHash: null,
        fetchedAt: new Date().toISOString(),
        depth: entry.depth,
        referrer: entry.referrer,
        ...extra,
      });
      const status = extra.status ?? null;
      const done: Omit<DoneResult, 'remaining'> = { kind: 'done', url, outcome, counted, status, bytes: extra.bytes ?? 0, requested, discoveredHosts };
      const c = await frontier.commit(member, counted, extra.bytes ?? 0, links, input.stepId ? { id: input.stepId, result: JSON.stringify(done) } : undefined);
      rt.deps.metrics?.recordFetch({ outcome, status, bytes: extra.bytes, durationMs: requested ? (extra.fetchMs ?? null) : null });
      // crawler_fetch_errors_total is for failures without a response; an HTTP error shows in the status label instead.
      if (extra.error && status === null) rt.deps.metrics?.recordError(extra.error.code);
      rt.deps.metrics?.setFrontierSize(input.host, c.remaining);
      log.info('page', { outcome, status, bytes: extra.bytes ?? 0, fetchMs: extra.fetchMs, depth: entry.depth, error: extra.error?.code });
      return { ...done, remaining: c.remaining };
    };

    let allowedByRobots: (u: string) => boolean = () => true;
    if ((await rt.deps.redis.exists(hostKeys(input.campaignKey, input.host).refused)) === 1) {
      return record('refused', 'failed', { requested: false, error: { code: 'ADDRESS_REFUSED', message: `${input.host} resolves to an address this campaign refuses (private, loopback, link-local or metadata)` } });
    }
    if (s.politeness.respectRobots) {
      if (input.robotsUnavailable) {
        // The cause (DNS_FAILURE, HTTP_503, …) is the code: it is why this URL was not fetched.
        const cause = input.robotsCause;
        return record('robots-unavailable', 'skipped', {
          requested: false,
          error: {
            code: cause?.code ?? 'ROBOTS_UNAVAILABLE',
            message: `robots.txt kept failing${cause ? ` (${cause.detail})` : ' (5xx/429/unreachable)'}: RFC 9309 says crawl nothing`,
          },
        });
      }
      const robots = (await rt.robots.get(input.host))?.parsed;
      // Expired from the shared cache (24 h): the workflow reloads it first.
      if (!robots) return { kind: 'wait', waitMs: 0, reason: 'robots.txt must be reloaded' };
      const rules = robots.rulesFor(s.politeness.userAgent);
      allowedByRobots = (u) => rules.isAllowed(u);
      if (!allowedByRobots(url)) return record('robots-disallowed', 'skipped', { requested: false });
    }

    let hostRequests: number | undefined;
    if (s.budgets.maxPagesPerHost !== null && (entry.kind ?? 'page') === 'page') {
      const st = await frontier.stats();
      hostRequests = (st.fetched ?? 0) + (st.failed ?? 0);
      if (hostRequests >= s.budgets.maxPagesPerHost) {
        return record('host-budget-exhausted', 'skipped', { requested: false, error: { code: 'HOST_BUDGET', message: `host reached its budget of ${s.budgets.maxPagesPerHost} pages` } });
      }
    }
    if (s.budgets.maxPages !== null && (entry.kind ?? 'page') === 'page' && !(await reserveBudget(rt.deps.redis, input.campaignKey, fp, s.budgets.maxPages))) {
      return { kind: 'budget-exhausted', url };
    }

    const clock = new HostClock(rt.deps.redis, await campaign.clockKeys.keyFor(input.host));
    const owner = `${input.campaignKey}|${fp}`;
    const lease = s.fetch.totalTimeoutMs + input.delayMs + 5_000;
    let wait = await clock.acquire(owner, lease, input.delayMs);
    // Short waits (another campaign or worker just used the host; durable
    // timers resolve to about a second) are waited out here.
    for (let i = 0; wait > 0 && wait < IN_STEP_WAIT_MAX_MS && i < 20; i++) {
      rt.deps.metrics?.recordPolitenessWait(wait);
      await sleep(wait, undefined, { signal: ctx.cancellationSignal });
      wait = await clock.acquire(owner, lease, input.delayMs);
    }
    // The domain sleeps this out and reports it as sleptMs with its next step.
    if (wait > 0) return { kind: 'wait', waitMs: wait, reason: 'host clock: another request to this host is too recent' };

    // A local activity has no heartbeat: its workflow task is kept alive instead.
    const heartbeat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
    // Attempts at this URL, this one included: the workflow counts them
    // because transient failures are retried by a durable sleep, not by
    // Temporal's activity retry (which stays for infrastructure failures).
    const attempt = input.retry?.url === url ? input.retry.attempts + 1 : 1;
    const retryLater = (waitMs: number, reason: string, status: number | null, code: string): CrawlStepResult => {
      rt.deps.metrics?.recordFetch({ outcome: 'retry', status });
      if (status === null) rt.deps.metrics?.recordError(code);
      // The back-off itself is counted as sleptMs by the step after it.
      log.info('retry later', { code, waitMs, attempt });
      return { kind: 'retry', url, waitMs, reason, status, code };
    };
    let res: FetchResult;
    try {
      res = await campaign.http.fetch(url, {
        // Same-host redirects are followed here; others go to their host's frontier.
        followRedirect: (_from, to) => sameHost(to, input.host) && allowedByRobots(to),
        signal: ctx.cancellationSignal,
      });
    } catch (err) {
      if (heartbeat) clearInterval(heartbeat);
      await clock.release(owner, input.delayMs);
      if (!isFetchError(err)) throw err;
      if (err.retryable && attempt <= s.fetch.maxRetries) {
        return retryLater(backoffMs(attempt, input.delayMs), `${err.code} on ${url}, retry ${attempt}/${s.fetch.maxRetries}`, null, err.code);
      }
      const outcome = err.code === 'ADDRESS_REFUSED' ? 'refused' : 'error';
      return record(outcome, 'failed', { requested: err.code !== 'ADDRESS_REFUSED', error: { code: err.code, message: err.message } });
    }
    if (heartbeat) clearInterval(heartbeat);

    const retryAfter = parseRetryAfter(res.headers['retry-after']);
    const overloaded = res.status === 429 || res.status >= 500;
    // Retry-After applies to the whole host: it goes on the shared clock.
    const hostPause = overloaded && retryAfter !== null ? Math.max(input.delayMs, retryAfter) : input.delayMs;
    await clock.release(owner, hostPause);
    // A 429 is the server pacing us, not the URL failing: it gets a few
    // attempts more than maxRetries before the URL is given up.
    const maxAttempts = res.status === 429 ? s.fetch.maxRetries + THROTTLE_EXTRA_ATTEMPTS : s.fetch.maxRetries;
    if (overloaded && attempt <= maxAttempts) {
      const why = retryAfter !== null ? `HTTP ${res.status} with Retry-After ${Math.round(hostPause / 1000)} s` : `HTTP ${res.status}`;
      return retryLater(Math.max(hostPause, backoffMs(attempt, input.delayMs)), `${why} on ${url}, retry ${attempt}/${maxAttempts}`, res.status, `HTTP_${res.status}`);
    }

    const contentType = res.headers['content-type'] ?? null;
    const fetchMs = res.endedAt - res.startedAt;
    const common: Partial<IndexEntry> = {
      status: res.status,
      contentType,
      bytes: res.body.length,
      contentHash: contentHashOf(res.body),
      fetchedAt: new Date(res.startedAt).toISOString(),
      fetchMs,
      redirects: res.redirects.length ? res.redirects.map((r) => r.location) : undefined,
      truncated: res.truncated,
      ...(entry.kind && entry.kind !== 'page' ? { kind: entry.kind } : {}),
    };
    const ok = res.status >= 200 && res.status < 300;
    const html = isHtml(contentType);

    // Non-HTML bodies are never parsed for links; by policy they are stored or only indexed.
    if (ok && !html && (entry.kind ?? 'page') === 'page' && s.content.nonHtml === 'skip') {
      return record('skipped-content-type', 'fetched', { requested: true, ...common });
    }

    let candidates: Candidate[] = [];
    let canonical: string | null | undefined;
    let duplicateOf: IndexEntry['duplicateOf'];
    let sitemap: IndexEntry['sitemap'];
    if (res.stoppedRedirect) {
      // A redirect is not a link hop: the target keeps the depth (and the entry's kind).
      candidates = [{ url: res.stoppedRedirect.to, depth: entry.depth, kind: entry.kind }];
    } else if (entry.kind === 'sitemap' || entry.kind === 'sitemap-child') {
      if (ok) {
        const listed = sitemapCandidatesOf(res.body, res.finalUrl, contentType, entry.kind, entry.depth);
        candidates = listed.candidates;
        sitemap = listed.summary;
      }
    } else if (ok && html) {
      // Overlong links are kept past the normaliser so the trap rules reject them with a reason on record.
      const page = extractLinks(decodeBody(res.body, contentType).text, res.finalUrl, { withText: s.content.dedup === 'near', maxLength: OVERLONG_LINK_CHARS });
      canonical = page.canonical;
      duplicateOf = await checkDuplicate(rt, campaign, url, common.contentHash!, page.text);
      const expand = !page.metaRobots.nofollow && (!duplicateOf || s.content.expandDuplicates);
      if (expand) candidates = page.links.filter((l) => !l.nofollow).map((l) => ({ url: l.url, depth: entry.depth + 1 }));
    }

    const hostBudgetLeft = s.budgets.maxPagesPerHost === null ? undefined : s.budgets.maxPagesPerHost - (hostRequests ?? 0) - 1;
    const routed = await routeCandidates(rt, campaign, input, url, candidates, { ownHostBudgetLeft: hostBudgetLeft });
    if (sitemap) sitemap.added = routed.own.length;
    const loc = await out.warc.writeExchange({
      url,
      fetchedAt: new Date(res.startedAt),
      ip: res.remoteAddress ?? undefined,
      request: { method: 'GET', headers: res.requestHeaders, path: pathOf(res.finalUrl) },
      response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
      metadata: warcMetadata(fetchMs, candidates, duplicateOf, canonical),
    });
    const isSitemap = entry.kind === 'sitemap' || entry.kind === 'sitemap-child';
    // A final 4xx, or a 5xx/429 that outlasted its retries, is the URL failing,
    // not a page: typed like any other failure, though the response stays in
    // the WARC as evidence. A sitemap probe that 404s is not a failure of the
    // crawl (most hosts have no /sitemap.xml), so sitemaps keep their outcome.
    const httpError = !res.stoppedRedirect && !isSitemap && res.status >= 400;
    const outcome = res.stoppedRedirect ? 'redirect' : isSitemap ? 'sitemap' : httpError ? 'http-error' : duplicateOf ? 'duplicate' : 'fetched';
    // Sitemaps are requests but not pages: they count neither as pages nor against page budgets.
    const counted = isSitemap ? 'skipped' : httpError ? 'failed' : 'fetched';
    return record(outcome, counted, {
      requested: true,
      ...common,
      ...(httpError ? { error: { code: `HTTP_${res.status}`, message: `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}` } } : {}),
      warc: { file: loc.file, offset: loc.offset, length: loc.length },
      ...(canonical ? { canonical } : {}),
      ...(duplicateOf ? { duplicateOf } : {}),
      ...(routed.rejectedLinks ? { rejectedLinks: routed.rejectedLinks } : {}),
      ...(sitemap ? { sitemap } : {}),
      links: routed.own,
      discoveredHosts: routed.discoveredHosts,
    });
  };
}

/** Exact and near-duplicate check against every page of the campaign so far (shared by all workers in Redis). */
async function checkDuplicate(
  rt: WorkerRuntime,
  campaign: CampaignRuntime,
  url: string,
  contentHash: string,
  text: string | undefined,
): Promise<IndexEntry['duplicateOf']> {
  const c = campaign.settings.content;
  if (c.dedup === 'off') return undefined;
  // Very short texts collide by chance; only the exact check applies to them.
  const simhash = c.dedup === 'near' && text && text.split(' ').length >= MIN_SIMHASH_WORDS ? simhash64(text) : null;
  const verdict = await new ContentIndex(rt.deps.redis, campaign.key, { maxDistance: c.maxSimhashDistance }).check({ url, exactHash: contentHash, simhash });
  if (verdict.kind === 'exact-duplicate') return { url: verdict.of, kind: 'exact', distance: 0 };
  if (verdict.kind === 'near-duplicate') return { url: verdict.of, kind: 'near', distance: verdict.distance };
  return undefined;
}

/** The WARC metadata record of an exchange: what a replay or analysis tool needs that the response does not say. */
function warcMetadata(
  fetchMs: number,
  candidates: Candidate[],
  duplicateOf: IndexEntry['duplicateOf'],
  canonical: string | null | undefined,
): Record<string, string | string[]> {
  const m: Record<string, string | string[]> = { fetchTimeMs: String(fetchMs) };
  if (candidates.length) m.outlink = candidates.slice(0, MAX_METADATA_OUTLINKS).map((c) => c.url.slice(0, 2048));
  if (canonical) m.canonical = canonical;
  if (duplicateOf) m.duplicateOf = `${duplicateOf.kind} ${duplicateOf.distance} ${duplicateOf.url}`;
  return m;
}

function sameHost(url: string, host: string): boolean {
  try {
    return hostKey(url) === host;
  } catch {
    return false;
  }
}

function pathOf(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

/** Exponential back-off that never undercuts the host's crawl-delay. */
function backoffMs(attempt: number, delayMs: number): number {
  return Math.max(delayMs, Math.min(1_000 * 2 ** attempt, 5 * 60_000));
}
