import { randomBytes } from 'node:crypto';
import { isFetchError } from '../src/http/fetch-error';
import type { FetchResult } from '../src/http/http-client';
import { parseRetryAfter } from '../src/http/retry-after';
import { extractLinks } from '../src/parse/links';
import { decodeBody, isHtml } from '../src/parse/decode';
import { reserveBudget } from '../src/redis/campaign-store';
import type { Frontier, EnqueueItem, FrontierEntry } from '../src/redis/frontier';
import { contentHashOf, type IndexEntry } from '../src/storage/index-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { ContentIndex } from '../src/dedup/content-index';
import { simhash64, simhashToHex } from '../src/dedup/simhash';
import { hintRevisits, RevisitSchedule } from '../src/redis/revisit';
import { conditionalHeaders, planNotRequested, planRevisit, sitemapHintMs, type Observation, type RevisitMeta } from '../src/revisit/adapt';
import { hostKey } from '../src/url/normalize';
import { PayloadIndex } from '../src/dedup/payload-index';
import { payloadDigestOf, type WarcLocation } from '../src/storage/warc-writer';
import { loadHandler } from '../src/handlers/loader';
import { runHook, type HookRun } from '../src/handlers/runner';
import type { DatasetLine } from '../src/storage/dataset-writer';
import { normalizeUrl } from '../src/url/normalize';
import { redirectTargetOf, routeCandidates, sitemapCandidatesOf, type Candidate } from './discovery';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { Outcome } from './types';

/** Attempts a URL answered with 429 gets beyond fetch.maxRetries. */
const THROTTLE_EXTRA_ATTEMPTS = 5;
/** Pages with fewer words get the exact check only: short texts share SimHashes by chance. */
const MIN_SIMHASH_WORDS = 50;
/** Longest link the normaliser hands to the trap rules (beyond it a link only counts as invalid). */
const OVERLONG_LINK_CHARS = 256 * 1024;
/** Outlinks listed in a WARC metadata record. */
const MAX_METADATA_OUTLINKS = 1000;

/** One claimed frontier entry, and what the session knows that the page needs. */
export interface PageJob {
  campaign: CampaignRuntime;
  frontier: Frontier;
  host: string;
  member: string;
  entry: FrontierEntry;
  /** Claims of this entry so far, this one included. */
  attempts: number;
  /** Of the earlier claims, those that ended in a deliberate retry (5xx, 429, a network error). */
  retried: number;
  /** The host's pause between requests now; a Retry-After may lengthen it. */
  delayMs: number;
  /** Robots rules for the host, null when robots.txt is not respected. */
  allowedByRobots: ((url: string) => boolean) | null;
  /** Hosts that got URLs and need their workflow woken: the session marks them ready. */
  wake: (hosts: string[]) => Promise<void>;
  /**
   * Gives the host clock back, the next request due `pauseMs` from now:
   * called as soon as the response is in (parsing and storing are not the
   * host's business). The session calls it too; only the first call counts.
   */
  releaseClock: (pauseMs: number) => Promise<void>;
  signal: AbortSignal;
}

/**
 * What became of a page. `done`: committed (index line, counters, its
 * same-host links). `retry`: a transient failure; the URL stays claimed and
 * the session waits `waitMs` (≥ the delay, ≥ Retry-After) before its next
 * attempt. `budget`: the campaign's page budget is spent; nothing
 * committed. `hostPauseMs`: how long the host clock must keep the host
 * quiet after this request (the delay, or a longer Retry-After).
 */
export type PageResult =
  | ({ kind: 'done'; requested: boolean; hostPauseMs: number } & Outcome)
  | { kind: 'retry'; url: string; waitMs: number; reason: string; status: number | null; code: string; hostPauseMs: number }
  | { kind: 'budget'; url: string };

/**
 * Processes one claimed URL: budgets, the fetch (the caller holds the host
 * clock), storage (WARC + index), dedup, and discovered URLs routed to their
 * hosts' frontiers. Idempotent per URL: the entry stays claimed until the
 * commit, the seen-sets ignore links already enqueued and the budget slot is
 * keyed by the URL fingerprint; a worker dying between storing and
 * committing means the URL is fetched and stored again
 * (docs/guarantees.md).
 */
export async function processPage(rt: WorkerRuntime, job: PageJob): Promise<PageResult> {
  const { campaign, frontier, entry, host } = job;
  const s = campaign.settings;
  const { url } = entry;
  const fp = urlFingerprint(url);
  const index = await rt.outputs.index(s.output.dir);
  const log = rt.log.child({ campaign: s.campaignId, host, url });
  const kind = entry.kind ?? 'page';
  // This attempt's id: in its index line and, if its commit is the one that
  // counts, stored by the commit (src/storage/seal.ts keeps that line only).
  const attemptId = newAttemptId();

  // Continuous crawling: every URL requested gets its next visit
  // (src/revisit/adapt.ts); what the last one saw makes this one conditional.
  const schedule = s.revisit?.enabled ? new RevisitSchedule(rt.deps.redis, campaign.key, host) : null;
  const previous: RevisitMeta | null = schedule ? await schedule.meta(fp) : null;

  const record = async (
    outcome: string,
    counted: 'fetched' | 'failed' | 'skipped',
    details: Partial<IndexEntry> & { requested: boolean; links?: EnqueueItem[]; hostPauseMs?: number; seen?: Observation },
  ): Promise<PageResult> => {
    const { requested, links = [], hostPauseMs = job.delayMs, seen, ...extra } = details;
    let change: string | undefined;
    if (schedule && requested) {
      const plan = planRevisit(previous, seen ?? { status: extra.status ?? null }, s.revisit);
      // A page that kept answering 404/410 leaves the schedule, recorded as gone.
      if (plan.verdict === 'gone') outcome = 'gone';
      // Before the commit: a worker dying between the two re-fetches the
      // URL, which at worst adapts its interval twice; never loses it.
      await schedule.set(job.member, fp, plan.intervalMs, plan.meta, plan.verdict);
      change = plan.verdict;
    } else if (schedule && (outcome === 'robots-disallowed' || outcome === 'refused')) {
      // Not requested this time, but robots.txt and a host's addresses
      // change (a site's `Disallow: /` for an hour of maintenance): a URL
      // visited before stays on its schedule. The due-move took it off, and
      // the seen-set would never let it back. A budget's skip is final.
      const plan = planNotRequested(previous, s.revisit);
      if (plan) await schedule.set(job.member, fp, plan.intervalMs, plan.meta, plan.verdict);
    }
    await index.append(indexLine(job, attemptId, outcome, change ? { ...extra, change } : extra));
    const status = extra.status ?? null;
    const c = await frontier.commit(job.member, counted, extra.bytes ?? 0, links, { fp, id: attemptId });
    rt.deps.metrics?.setFrontierSize(host, c.remaining);
    rt.deps.metrics?.recordFetch({ outcome, status, bytes: extra.bytes, durationMs: requested ? (extra.fetchMs ?? null) : null });
    // crawler_fetch_errors_total is for failures without a response; an HTTP error shows in the status label instead.
    if (extra.error && status === null) rt.deps.metrics?.recordError(extra.error.code);
    log.info('page', { outcome, status, bytes: extra.bytes ?? 0, fetchMs: extra.fetchMs, depth: entry.depth, error: extra.error?.code });
    return { kind: 'done', url, outcome, counted, status, bytes: extra.bytes ?? 0, requested, hostPauseMs };
  };

  if (job.allowedByRobots && !job.allowedByRobots(url)) return record('robots-disallowed', 'skipped', { requested: false, hostPauseMs: 0 });

  let hostRequests: number | undefined;
  if (s.budgets.maxPagesPerHost !== null && kind === 'page') {
    const st = await frontier.stats();
    hostRequests = (st.fetched ?? 0) + (st.failed ?? 0);
    if (hostRequests >= s.budgets.maxPagesPerHost) {
      return record('host-budget-exhausted', 'skipped', {
        requested: false,
        hostPauseMs: 0,
        error: { code: 'HOST_BUDGET', message: `host reached its budget of ${s.budgets.maxPagesPerHost} pages` },
      });
    }
  }
  if (s.budgets.maxPages !== null && kind === 'page' && !(await reserveBudget(rt.deps.redis, campaign.key, fp, s.budgets.maxPages))) {
    // The URL was taken from the frontier: it gets its line, the ones still queued do not.
    await record('budget-exhausted', 'skipped', {
      requested: false,
      hostPauseMs: 0,
      error: { code: 'PAGE_BUDGET', message: `the campaign reached its budget of ${s.budgets.maxPages} page requests` },
    });
    return { kind: 'budget', url };
  }

  const attempt = job.attempts;
  const retryLater = (waitMs: number, reason: string, status: number | null, code: string, hostPauseMs: number): PageResult => {
    rt.deps.metrics?.recordFetch({ outcome: 'retry', status });
    if (status === null) rt.deps.metrics?.recordError(code);
    log.info('retry later', { code, waitMs, attempt });
    return { kind: 'retry', url, waitMs, reason, status, code, hostPauseMs };
  };
  let res: FetchResult;
  try {
    // Redirects are never followed inside a fetch: each hop is its own
    // frontier entry, fetched under its host's clock and archived under its
    // own URL (docs/crawling-rules.md).
    res = await campaign.http.fetch(url, { followRedirect: () => false, signal: job.signal, headers: conditionalHeaders(previous) });
  } catch (err) {
    await job.releaseClock(job.delayMs);
    // Cancelled (the worker is going away): nothing happened to the URL.
    if (!isFetchError(err) || job.signal.aborted) throw err;
    if (err.retryable && attempt <= s.fetch.maxRetries) {
      return retryLater(backoffMs(attempt, job.delayMs), `${err.code} on ${url}, retry ${attempt}/${s.fetch.maxRetries}`, null, err.code, job.delayMs);
    }
    const outcome = err.code === 'ADDRESS_REFUSED' ? 'refused' : 'error';
    return record(outcome, 'failed', { requested: err.code !== 'ADDRESS_REFUSED', error: { code: err.code, message: err.message } });
  }

  const retryAfter = parseRetryAfter(res.headers['retry-after']);
  const overloaded = res.status === 429 || res.status >= 500;
  // Retry-After applies to the whole host: it goes on the shared clock.
  const hostPause = overloaded && retryAfter !== null ? Math.max(job.delayMs, retryAfter) : job.delayMs;
  await job.releaseClock(hostPause);
  // A 429 is the server pacing us, not the URL failing: it gets a few
  // attempts more than maxRetries before the URL is given up.
  const maxAttempts = res.status === 429 ? s.fetch.maxRetries + THROTTLE_EXTRA_ATTEMPTS : s.fetch.maxRetries;
  if (overloaded && attempt <= maxAttempts) {
    const why = retryAfter !== null ? `HTTP ${res.status} with Retry-After ${Math.round(hostPause / 1000)} s` : `HTTP ${res.status}`;
    return retryLater(Math.max(hostPause, backoffMs(attempt, job.delayMs)), `${why} on ${url}, retry ${attempt}/${maxAttempts}`, res.status, `HTTP_${res.status}`, hostPause);
  }

  const contentType = res.headers['content-type'] ?? null;
  const fetchMs = res.endedAt - res.startedAt;
  const validators = { etag: res.headers.etag ?? null, lastModified: res.headers['last-modified'] ?? null };

  // Not modified since the capture the conditional request named: a
  // revisit record (profile server-not-modified) referring to it, no body.
  if (res.status === 304 && previous?.r) {
    const warc = await rt.outputs.warc(s.output.dir, s.campaignId);
    const fetchedAt = new Date(res.startedAt);
    const of = { uri: previous.r.u, date: previous.r.t, recordId: previous.r.id };
    const loc = await warc.writeExchange({
      url,
      fetchedAt,
      ip: res.remoteAddress ?? undefined,
      request: { method: 'GET', headers: res.requestHeaders, path: pathOf(url) },
      response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
      metadata: { fetchTimeMs: String(fetchMs) },
      revisit: { ...of, profile: 'server-not-modified', ...(previous.d ? { payloadDigest: previous.d } : {}) },
    });
    return record('not-modified', 'fetched', {
      requested: true,
      hostPauseMs: hostPause,
      status: res.status,
      contentType,
      bytes: res.body.length,
      fetchedAt: fetchedAt.toISOString(),
      fetchMs,
      warc: { file: loc.file, offset: loc.offset, length: loc.length },
      revisit: { url: of.uri, date: of.date, recordId: of.recordId },
      seen: { status: 304, ...validators },
    });
  }

  const common: Partial<IndexEntry> = {
    status: res.status,
    contentType,
    bytes: res.body.length,
    contentHash: contentHashOf(res.body),
    fetchedAt: new Date(res.startedAt).toISOString(),
    fetchMs,
    truncated: res.truncated,
    ...(entry.kind && entry.kind !== 'page' ? { kind: entry.kind } : {}),
  };
  const ok = res.status >= 200 && res.status < 300;
  const html = isHtml(contentType);
  let decoded: string | undefined;
  const text = () => (decoded ??= decodeBody(res.body, contentType).text);

  // Non-HTML bodies are never parsed for links; by policy they are stored or only indexed.
  if (ok && !html && kind === 'page' && s.content.nonHtml === 'skip') {
    return record('skipped-content-type', 'fetched', { requested: true, hostPauseMs: hostPause, ...common });
  }

  let candidates: Candidate[] = [];
  let canonical: string | null | undefined;
  let duplicateOf: IndexEntry['duplicateOf'];
  /** The content index looked at this body (an HTML 2xx with dedup on): its exact verdict decides who stores the payload. */
  let contentChecked = false;
  let simhashHex: string | null = null;
  let sitemap: IndexEntry['sitemap'];
  // Each hop is its own entry; a chain longer than fetch.maxRedirects ends here, typed.
  const hops = (entry.redirects ?? 0) + 1;
  const tooManyRedirects = res.stoppedRedirect !== undefined && hops > s.fetch.maxRedirects;
  if (res.stoppedRedirect && !tooManyRedirects) {
    // A redirect is not a link hop: the target keeps the depth (and the entry's kind).
    const target = redirectTargetOf(res.stoppedRedirect.to, url, OVERLONG_LINK_CHARS);
    candidates = target === null ? [] : [{ url: target, depth: entry.depth, kind: entry.kind, redirects: hops, label: entry.label }];
  } else if (res.stoppedRedirect) {
    // The 3xx is archived; its target is not followed.
  } else if (kind === 'sitemap' || kind === 'sitemap-child') {
    if (ok) {
      const listed = sitemapCandidatesOf(res.body, res.finalUrl, contentType, kind, entry.depth, res.truncated !== null);
      candidates = listed.candidates;
      sitemap = listed.summary;
      // A revisit campaign takes the sitemap's word for how often its pages change, until it has seen for itself.
      if (schedule && listed.hints.length) {
        const now = Date.now();
        const hints = listed.hints.flatMap((h) => {
          const ms = hostKey(h.url) === host ? sitemapHintMs(h, now, s.revisit) : null;
          return ms === null ? [] : [{ fp: urlFingerprint(h.url), intervalMs: ms }];
        });
        await hintRevisits(rt.deps.redis, campaign.key, host, hints);
      }
    }
  } else if (ok && html) {
    // Overlong links are kept past the normaliser so the trap rules reject them with a reason on record.
    const page = extractLinks(text(), res.finalUrl, {
      withText: s.content.dedup === 'near' || schedule !== null,
      maxLength: OVERLONG_LINK_CHARS,
    });
    canonical = page.canonical;
    // What tells a revisit's boilerplate churn from a change (src/revisit/adapt.ts).
    if (schedule && page.text && page.text.split(' ').length >= MIN_SIMHASH_WORDS) simhashHex = simhashToHex(simhash64(page.text));
    duplicateOf = await checkDuplicate(rt, campaign, url, common.contentHash!, page.text);
    contentChecked = s.content.dedup !== 'off';
    // A duplicate's links are followed like any page's: mirrors and shared
    // templates must not cost coverage, and the seen-sets make links
    // already known free (docs/crawling-rules.md).
    if (!page.metaRobots.nofollow) candidates = page.links.filter((l) => !l.nofollow).map((l) => ({ url: l.url, depth: entry.depth + 1 }));
  }

  // The campaign's handler: on every 2xx response of a page entry that is
  // stored (HTML or not; redirects, errors and sitemaps never reach it),
  // after the fetch and before the commit (docs/handlers.md).
  let hook: (HookRun & { filter?: (url: string) => boolean }) | null = null;
  if (s.handler && ok && kind === 'page' && !res.stoppedRedirect) {
    hook = await runHandler(rt, job, s.handler, s.handlerTimeoutMs, { res, contentType, text: text(), log });
    if (hook?.ok) {
      const filter = hook.filter;
      const own = hook.output.skipDefaultLinks ? [] : filter ? candidates.filter((c) => filter(c.url)) : candidates;
      const added: Candidate[] = [];
      for (const l of hook.output.links) {
        let target: string;
        try {
          target = normalizeUrl(l.url);
        } catch {
          continue;
        }
        // Through routeCandidates below like the page's own links: depth, traps, scope, seen-sets; robots, address policy and politeness where the target is fetched.
        added.push({ url: target, depth: entry.depth + 1, label: l.label });
      }
      // The hook's links go first: a URL the page also links to keeps the hook's label (the first of a URL is the one enqueued).
      candidates = [...added, ...own];
    }
    // null: the handler has no hook for this page's label (nor onPage).
    if (hook) rt.deps.metrics?.recordHandlerRun(hook.ok ? 'ok' : 'failed');
  }

  const hostBudgetLeft = s.budgets.maxPagesPerHost === null ? undefined : s.budgets.maxPagesPerHost - (hostRequests ?? 0) - 1;
  const routed = await routeCandidates(rt, campaign, host, url, candidates, job.wake, { ownHostBudgetLeft: hostBudgetLeft });
  if (sitemap) sitemap.added = routed.own.length;
  const warc = await rt.outputs.warc(s.output.dir, s.campaignId);
  const fetchedAt = new Date(res.startedAt);
  // A payload the campaign stored before becomes a revisit record referring
  // to that copy (src/dedup/payload-index.ts); the first one is claimed,
  // written in full and only then offered to revisits.
  // Only complete 2xx payloads take part: an error page or a redirect's body stays in full with its URL.
  const payloads = s.content.dedup !== 'off' && ok && res.body.length > 0 && !res.truncated ? new PayloadIndex(rt.deps.redis, campaign.key) : null;
  const digest = payloads ? payloadDigestOf(res.body) : '';
  // The content index already settled, atomically, which URL first had
  // these exact bytes: that page stores them without a claim of its own (one
  // Redis call fewer per page), and its exact duplicates wait for its copy.
  // The verdict is the URL's first (it is kept per URL): only a first visit's
  // first attempt may rely on it. A retry or a revisit claims as usual.
  const firstLook = contentChecked && job.attempts === 1 && schedule === null;
  const claim = !payloads
    ? null
    : firstLook && duplicateOf?.kind === 'exact'
      ? await payloads.awaitStored(digest, attemptId, job.signal)
      : firstLook && !duplicateOf
        ? ({ kind: 'original' } as const)
        : await payloads.claim(digest, attemptId, job.signal);
  let loc: WarcLocation;
  try {
    loc = await warc.writeExchange({
      url,
      fetchedAt,
      ip: res.remoteAddress ?? undefined,
      request: { method: 'GET', headers: res.requestHeaders, path: pathOf(url) },
      response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated, ...(digest ? { payloadDigest: digest } : {}) },
      metadata: warcMetadata(fetchMs, candidates, duplicateOf, canonical),
      ...(claim?.kind === 'revisit' ? { revisit: claim.of } : {}),
    });
  } catch (err) {
    if (claim?.kind === 'original') await payloads!.abandon(digest, attemptId).catch(() => undefined);
    throw err;
  }
  if (claim?.kind === 'original') await payloads!.confirm(digest, { uri: url, date: fetchedAt.toISOString(), recordId: loc.recordId });
  const items = hook?.ok ? hook.output.items : [];
  if (items.length > 0) {
    // Before the index line: an attempt whose index line never lands has its items dropped at sealing.
    const tag = { url, fp, attemptId, campaignId: s.campaignId, label: entry.label ?? null, fetchedAt: common.fetchedAt!, warc: { file: loc.file, offset: loc.offset } };
    await (await rt.outputs.dataset(s.output.dir)).appendAll(items.map((item): DatasetLine => ({ ...tag, item })));
  }
  const handlerFailed = hook !== null && !hook.ok;
  // The full capture a later 304 refers to: this response, or the record an identical-payload revisit points at.
  const seen: Observation | undefined = schedule
    ? {
        status: res.status,
        ...validators,
        digest: ok && res.body.length > 0 && !res.truncated ? digest || payloadDigestOf(res.body) : null,
        simhash: simhashHex,
        ref: claim?.kind === 'revisit' ? { u: claim.of.uri, t: claim.of.date, id: claim.of.recordId } : { u: url, t: fetchedAt.toISOString(), id: loc.recordId },
      }
    : undefined;
  const isSitemap = kind === 'sitemap' || kind === 'sitemap-child';
  // A final 4xx, or a 5xx/429 that outlasted its retries, is the URL failing,
  // not a page: typed like any other failure, though the response stays in
  // the WARC as evidence. A sitemap probe that 404s is not a failure of the
  // crawl (most hosts have no /sitemap.xml), so sitemaps keep their outcome.
  const httpError = !res.stoppedRedirect && !isSitemap && res.status >= 400;
  const outcome =
    tooManyRedirects || handlerFailed ? 'error' : res.stoppedRedirect ? 'redirect' : isSitemap ? 'sitemap' : httpError ? 'http-error' : duplicateOf ? 'duplicate' : 'fetched';
  // Sitemaps are requests but not pages: they count neither as pages nor against page budgets.
  const counted = isSitemap ? 'skipped' : httpError || tooManyRedirects || handlerFailed ? 'failed' : 'fetched';
  return record(outcome, counted, {
    requested: true,
    hostPauseMs: hostPause,
    ...common,
    ...(res.stoppedRedirect ? { redirectTo: res.stoppedRedirect.to } : {}),
    ...(httpError ? { error: { code: `HTTP_${res.status}`, message: `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}` } } : {}),
    ...(tooManyRedirects
      ? { error: { code: 'TOO_MANY_REDIRECTS', message: `redirect number ${hops} (to ${res.stoppedRedirect!.to}); fetch.maxRedirects is ${s.fetch.maxRedirects}` } }
      : {}),
    ...(hook && !hook.ok ? { error: { code: 'HANDLER_ERROR', message: hook.message } } : {}),
    warc: { file: loc.file, offset: loc.offset, length: loc.length },
    ...(claim?.kind === 'revisit' ? { revisit: { url: claim.of.uri, date: claim.of.date, recordId: claim.of.recordId } } : {}),
    ...(hook ? { items: items.length } : {}),
    ...(canonical ? { canonical } : {}),
    ...(duplicateOf ? { duplicateOf } : {}),
    ...(routed.rejectedLinks ? { rejectedLinks: routed.rejectedLinks } : {}),
    ...(sitemap ? { sitemap } : {}),
    links: routed.own,
    seen,
  });
}

/**
 * An attempt's id: 48 random bits, unique among the few attempts one URL
 * ever gets (it only has to tell them apart), short in Redis and the index.
 */
export function newAttemptId(): string {
  return randomBytes(6).toString('base64url');
}

/**
 * Runs the campaign's handler on a response: the page's hook by its label,
 * watched for blocking the thread. A module that cannot be loaded throws
 * (processPage fails, and the URL ends INTERNAL_ERROR after its attempts);
 * prepareCampaign refuses such campaigns before they start.
 */
async function runHandler(
  rt: WorkerRuntime,
  job: PageJob,
  spec: string,
  timeoutMs: number,
  p: { res: FetchResult; contentType: string | null; text: string; log: ReturnType<WorkerRuntime['log']['child']> },
): Promise<(HookRun & { filter?: (url: string) => boolean }) | null> {
  const handler = await loadHandler(spec);
  const log = p.log.child({ handler: true, label: job.entry.label ?? null });
  const leave = rt.loopWatch.enter(job.entry.url);
  let run: HookRun | null;
  try {
    run = await runHook(
      handler,
      {
        url: job.entry.url,
        finalUrl: p.res.finalUrl,
        depth: job.entry.depth,
        label: job.entry.label ?? null,
        status: p.res.status,
        headers: p.res.headers as Record<string, string>,
        contentType: p.contentType,
        body: p.res.body,
        text: p.text,
        log: {
          debug: (m, f) => log.debug(m, f),
          info: (m, f) => log.info(m, f),
          warn: (m, f) => log.warn(m, f),
          error: (m, f) => log.error(m, f),
        },
      },
      timeoutMs,
    );
  } finally {
    leave();
  }
  if (!run || !run.ok || !handler.filterLink) return run;
  const filterLink = handler.filterLink;
  const ctx = run.ctx;
  // filterLink only narrows the crawl; one that throws keeps the link (the crawler's rules still apply) and says so once.
  let warned = false;
  return {
    ...run,
    filter: (u) => {
      try {
        return filterLink(u, ctx) !== false;
      } catch (err) {
        if (!warned) log.warn('filterLink threw; links kept', { error: String(err).slice(0, 500) });
        warned = true;
        return true;
      }
    },
  };
}

/** The index line of a claimed URL: what every outcome has, then the outcome's own fields. */
function indexLine(job: PageJob, attemptId: string, outcome: string, extra: Partial<IndexEntry> = {}): IndexEntry {
  return {
    url: job.entry.url,
    fp: urlFingerprint(job.entry.url),
    attemptId,
    host: job.host,
    campaignId: job.campaign.settings.campaignId,
    status: null,
    outcome,
    contentType: null,
    bytes: 0,
    contentHash: null,
    fetchedAt: new Date().toISOString(),
    depth: job.entry.depth,
    referrer: job.entry.referrer,
    ...(job.entry.label ? { label: job.entry.label } : {}),
    ...extra,
  };
}

/** A URL finished without a request (its host may not be fetched at all): an index line and the commit. */
export async function recordWithoutFetch(
  rt: WorkerRuntime,
  job: PageJob,
  outcome: string,
  counted: 'fetched' | 'failed' | 'skipped',
  error: { code: string; message: string },
): Promise<void> {
  const s = job.campaign.settings;
  const attemptId = newAttemptId();
  await (await rt.outputs.index(s.output.dir)).append(indexLine(job, attemptId, outcome, { error }));
  // A revisit URL stays on its schedule (a refusal and robots.txt's state both expire).
  if (s.revisit?.enabled) {
    const fp = urlFingerprint(job.entry.url);
    const schedule = new RevisitSchedule(rt.deps.redis, job.campaign.key, job.host);
    const plan = planNotRequested(await schedule.meta(fp), s.revisit);
    if (plan) await schedule.set(job.member, fp, plan.intervalMs, plan.meta, plan.verdict);
  }
  await job.frontier.commit(job.member, counted, 0, [], { fp: urlFingerprint(job.entry.url), id: attemptId });
  rt.deps.metrics?.recordFetch({ outcome, status: null });
}

/**
 * The URL keeps failing for a reason other than the network (a parser bug,
 * storage that cannot be written, a worker that died on it every time): it
 * is recorded as failed with the cause, so its host goes on. The index line
 * is written if the index can be written at all.
 */
export async function recordInternalError(rt: WorkerRuntime, job: PageJob, cause: unknown): Promise<PageResult> {
  const s = job.campaign.settings;
  const message = `processing failed ${job.attempts - job.retried} times: ${cause instanceof Error ? cause.message : String(cause)}`.slice(0, 2000);
  const attemptId = newAttemptId();
  try {
    await (await rt.outputs.index(s.output.dir)).append(indexLine(job, attemptId, 'error', { error: { code: 'INTERNAL_ERROR', message } }));
  } catch (err) {
    rt.log.error('index line for an internal error could not be written', { url: job.entry.url, error: String(err) });
  }
  // A revisit campaign keeps the URL on its schedule at its interval: the
  // due-move took it off, and only a recorded visit puts it back.
  const revisit = s.revisit?.enabled ? s.revisit : null;
  if (revisit) {
    const fp = urlFingerprint(job.entry.url);
    const schedule = new RevisitSchedule(rt.deps.redis, job.campaign.key, job.host);
    const plan = planRevisit(await schedule.meta(fp), { status: null }, revisit);
    await schedule.set(job.member, fp, plan.intervalMs, plan.meta, plan.verdict);
  }
  await job.frontier.commit(job.member, 'failed', 0, [], { fp: urlFingerprint(job.entry.url), id: attemptId });
  rt.deps.metrics?.recordError('INTERNAL_ERROR');
  rt.log.error('page failed for good', { url: job.entry.url, error: message });
  return { kind: 'done', url: job.entry.url, outcome: 'error', counted: 'failed', status: null, bytes: 0, requested: true, hostPauseMs: job.delayMs };
}

/** Exact and near-duplicate check against every page of the campaign so far (shared by all workers in Redis). */
async function checkDuplicate(rt: WorkerRuntime, campaign: CampaignRuntime, url: string, contentHash: string, text: string | undefined): Promise<IndexEntry['duplicateOf']> {
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
function warcMetadata(fetchMs: number, candidates: Candidate[], duplicateOf: IndexEntry['duplicateOf'], canonical: string | null | undefined): Record<string, string | string[]> {
  const m: Record<string, string | string[]> = { fetchTimeMs: String(fetchMs) };
  if (candidates.length) m.outlink = candidates.slice(0, MAX_METADATA_OUTLINKS).map((c) => c.url.slice(0, 2048));
  if (canonical) m.canonical = canonical;
  if (duplicateOf) m.duplicateOf = `${duplicateOf.kind} ${duplicateOf.distance} ${duplicateOf.url}`;
  return m;
}

function pathOf(url: string): string {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
}

/** Exponential back-off that never undercuts the host's crawl-delay. */
function backoffMs(attempt: number, delayMs: number): number {
  return Math.max(delayMs, Math.min(1_000 * 2 ** attempt, 5 * 60_000));
}
