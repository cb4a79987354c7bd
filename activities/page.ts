// One URL into one stored page, as a pipeline of stages (docs/architecture.md):
//
//   fetchPage (under the host clock)  →  the session releases the clock  →
//   processPage: classify → route links → store → commit
//
// (fetchPage may answer that the handler's login must run first: the session
// runs it in clock turns of its own and calls fetchPage again.)
//
// Each stage is a module of activities/pipeline/ that takes plain data and
// returns plain data; this file wires them to the worker's runtime (Redis,
// writers, the handler). Idempotent per URL: the entry stays claimed until
// the commit, the seen-sets ignore links already enqueued and the budget
// slot is keyed by the URL fingerprint; a worker dying between storing and
// committing means the URL is fetched and stored again (docs/guarantees.md).
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { randomFillSync } from 'node:crypto';
import type { PageFetcher, PageResponse } from '../src/browser/page-fetcher';
import type { FetchResult } from '../src/http/http-types';
import { reserveBudget, reserveEmbedBudget } from '../src/redis/campaign-store';
import { frontierBounds, type Frontier, type FrontierEntry } from '../src/redis/frontier';
import type { IndexEntry } from '../src/storage/index-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { ContentIndex } from '../src/dedup/content-index';
import { hasWords, simhash64 } from '../src/dedup/simhash';
import { hintRevisits, RevisitSchedule } from '../src/redis/revisit';
import { conditionalHeaders, sitemapHintMs, type Observation, type RevisitMeta } from '../src/revisit/adapt';
import { hostKey } from '../src/url/normalize';
import { impliedHops } from '../src/url/hop-path';
import { PayloadIndex } from '../src/dedup/payload-index';
import { payloadDigestOf } from '../src/storage/warc-writer';
import { parseOutputLocation } from '../src/storage/output-location';
import { handlerLog } from '../src/handlers/handler-log';
import { loadHandler } from '../src/handlers/loader';
import { pageContext, runHook, type HookInput, type HookRun } from '../src/handlers/runner';
import { withRenderHook } from '../src/browser/page-hook';
import { routeCandidates, type Candidate, type Routed } from './discovery';
import { classifyStage, MIN_SIMHASH_WORDS, type Classified } from './pipeline/classify-stage';
import { commitPage, type CommitDeps, type CommitTarget, type PageRecord } from './pipeline/commit-stage';
import { fetchStage, type FetchStageResult, type LoginGate } from './pipeline/fetch-stage';
import { OUTCOME, PAGE_CODE, type IndexOutcome } from './pipeline/outcome';
import { storeNotModified, storeStage, type Stored } from './pipeline/store-stage';
import type { RobotsVerdict } from './robots-verdict';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { Outcome } from './types';

/** One claimed frontier entry, and what the session knows that the page needs. Plain data: nothing in it calls back into the session. */
export interface PageJob {
  campaign: CampaignRuntime;
  frontier: Frontier;
  /** How the page is requested (the HTTP fetcher; a browser fetcher plugs in here). */
  fetcher: PageFetcher;
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
  signal: AbortSignal;
}

/**
 * Other hosts a page's links reached with nobody consuming their frontier.
 * The page marks them ready itself, before its commit (a worker dying after
 * the commit must not strand their URLs: the page is never routed again),
 * and says so here; `readied` counts those that became ready, so the session
 * knows to nudge the campaign (and, revisiting, to wake sleeping holders).
 * The session hands one to each page and reads it whatever the page's end:
 * a page recorded failed for good after its links were routed (its store or
 * commit threw on its last attempt) still made those hosts ready.
 */
export class WokenHosts {
  readonly hosts: string[] = [];
  readied = 0;

  add(hosts: string[], readied: number): void {
    this.hosts.push(...hosts);
    this.readied += readied;
  }
}

/**
 * What became of a page. `done`: committed (index line, counters, its
 * same-host links). `retry`: a transient
 * failure; the URL stays claimed and the session waits `waitMs` before its
 * next attempt. `budget`: the campaign's page budget is spent.
 */
export type PageResult =
  ({ kind: 'done' } & Outcome) | { kind: 'retry'; url: string; waitMs: number; reason: string; status: number | null; code: string } | { kind: 'budget'; url: string };

/** The fetch stage's result with the attempt it belongs to: what the session hands back to processPage once it has settled the clock. */
export interface FetchedPage {
  kind: 'fetched';
  job: PageJob;
  attempt: Attempt;
  fetched: Exclude<FetchStageResult, { kind: 'login-needed' }>;
  /** What the host clock needs: the next request to the host due this far from now; null: nothing was requested, the lease is given back unused. */
  hostPauseMs: number | null;
  /** How long the host has been quiet already (a rendered page's last request to it ended that long ago): the pause counts from then. */
  hostIdleMs?: number;
}

/** The handler's login must run before the page is requested (again): the fetch stage's word, for the session. */
export type LoginNeeded = Extract<FetchStageResult, { kind: 'login-needed' }>;

/** One attempt at a claimed URL. */
interface Attempt {
  target: CommitTarget;
  /** Continuous crawling: the host's revisit schedule and the URL's state on it (what the last visit saw makes this one conditional). */
  schedule: RevisitSchedule | null;
  previous: RevisitMeta | null;
}

/**
 * How the session sends under its host clock: `beforeSend` stamps the clock just before the request
 * goes out (and throws, nothing sent, when the session was superseded); `maxSlotWaitMs` bounds the
 * wait for the address slot by the session's time left (a host's first session).
 */
export interface SendGuard {
  beforeSend: () => Promise<void>;
  maxSlotWaitMs?: number;
}

/**
 * Stage 1, while the session holds the host clock: budgets, robots.txt, the
 * request and the retry decision. Returns as soon as the response is in.
 */
export async function fetchPage(rt: WorkerRuntime, job: PageJob, login: LoginGate | null = null, guard: SendGuard | null = null): Promise<FetchedPage | LoginNeeded> {
  const attempt = await attemptOf(rt, job);
  const s = job.campaign.settings;
  const fetched = await fetchStage(
    {
      url: job.entry.url,
      kind: job.entry.kind ?? 'page',
      label: job.entry.label ?? null,
      depth: job.entry.depth,
      attempt: job.attempts,
      delayMs: job.delayMs,
      allowedByRobots: job.allowedByRobots,
      maxPagesPerHost: s.budgets.maxPagesPerHost,
      maxPages: s.budgets.maxPages,
      maxEmbeds: s.budgets.maxEmbeds,
      maxRetries: s.fetch.maxRetries,
      headers: conditionalHeaders(attempt.previous),
      ...(guard?.maxSlotWaitMs !== undefined ? { maxSlotWaitMs: guard.maxSlotWaitMs } : {}),
    },
    {
      fetcher: job.fetcher,
      hostRequests: async () => {
        const st = await job.frontier.stats();
        return (st.fetched ?? 0) + (st.failed ?? 0);
      },
      reserveCampaignBudget: () => reserveBudget(rt.deps.redis, job.campaign.key, attempt.target.fp, s.budgets.maxPages!),
      reserveEmbedBudget: () => reserveEmbedBudget(rt.deps.redis, job.campaign.key, attempt.target.fp, s.budgets.maxEmbeds!),
      login,
      ...(guard ? { beforeSend: guard.beforeSend } : {}),
      signal: job.signal,
    },
  );
  if (fetched.kind === 'login-needed') return fetched;
  return {
    kind: 'fetched',
    job,
    attempt,
    fetched,
    hostPauseMs: fetched.hostPauseMs,
    ...(fetched.kind === 'response' && fetched.hostIdleMs ? { hostIdleMs: fetched.hostIdleMs } : {}),
  };
}

/**
 * Stages 2 to 4, after the session gave the host clock back: classify the
 * response, route what it adds (the other hosts it made ready go into
 * `woken`), store it, commit.
 */
export async function processPage(rt: WorkerRuntime, page: FetchedPage, woken: WokenHosts): Promise<PageResult> {
  const { job, attempt, fetched } = page;
  const url = job.entry.url;
  const commit = (rec: PageRecord) => commitPage(commitDeps(rt, job, attempt), attempt.target, rec);
  switch (fetched.kind) {
    case 'skipped': {
      // The URL was taken from the frontier: it gets its line, the ones still queued do not.
      const c = await commit({ outcome: fetched.outcome, counted: 'skipped', requested: false, fields: fetched.error ? { error: fetched.error } : {} });
      if (fetched.outcome === OUTCOME.budgetExhausted) return { kind: 'budget', url };
      return done(job, c);
    }
    case 'unsent':
      // The session's time ran out first: the host's next session requests it (this claim a retry).
      return { kind: 'retry', url, waitMs: 0, reason: fetched.reason, status: null, code: 'ADDRESS_BUSY' };
    case 'retry': {
      rt.deps.metrics?.recordFetch({ outcome: 'retry', status: fetched.status });
      if (fetched.status === null) rt.deps.metrics?.recordError(fetched.code);
      rt.log.info('retry later', { campaign: job.campaign.settings.campaignId, host: job.host, url, code: fetched.code, waitMs: fetched.waitMs, attempt: job.attempts });
      return { kind: 'retry', url, waitMs: fetched.waitMs, reason: fetched.reason, status: fetched.status, code: fetched.code };
    }
    case 'failed':
      return done(job, await commit({ outcome: fetched.outcome, counted: 'failed', requested: fetched.requested, fields: { error: fetched.error } }));
    case 'response':
      return respond(rt, job, attempt, fetched.response, { hostRequests: fetched.hostRequests, woken }, commit);
  }
}

/** A response through the rest of the pipeline: classify → route → store → commit. */
async function respond(
  rt: WorkerRuntime,
  job: PageJob,
  attempt: Attempt,
  res: PageResponse,
  { hostRequests, woken }: { hostRequests: number | undefined; woken: WokenHosts },
  commit: (rec: PageRecord) => Promise<Committed>,
): Promise<PageResult> {
  // A session superseded while its request was in flight stores nothing: no index verdict, links, WARC or dataset records of its own.
  await job.frontier.assertOwner();
  const classified = await classify(rt, job, attempt, res);
  switch (classified.kind) {
    case 'not-modified':
      return done(job, await commit(await storeNotModifiedOf(rt, job, attempt, res)));
    case 'skipped-content-type':
      return done(job, await commit({ outcome: OUTCOME.skippedContentType, counted: 'fetched', requested: true, fields: classified.common }));
    case 'page': {
      if (attempt.schedule) await hintSitemapRevisits(rt, job, classified.sitemapHints);
      const routed = await route(rt, job, classified.candidates, hostRequests, woken);
      const stored = await store(rt, job, attempt, res, classified);
      return done(job, await commit(pageRecord(job, attempt, res, classified, routed, stored)));
    }
  }
}

/** The classify stage, its duplicate check and handler from the runtime. */
function classify(rt: WorkerRuntime, job: PageJob, attempt: Attempt, res: PageResponse): Promise<Classified> {
  const s = job.campaign.settings;
  const url = job.entry.url;
  return classifyStage(
    {
      entry: job.entry,
      response: res,
      nonHtml: s.content.nonHtml,
      dedup: s.content.dedup,
      maxRedirects: s.fetch.maxRedirects,
      maxLinks: s.budgets.maxLinksPerPage,
      maxParseMs: s.content.maxParseMs,
      requisites: s.requisites,
      maxEmbeds: s.budgets.maxEmbedsPerPage,
      handler: Boolean(s.handler),
      revisit: attempt.schedule !== null,
      lastCapture: attempt.previous?.r !== undefined,
    },
    {
      checkDuplicate: (hash, text) => checkDuplicate(rt, job.campaign, url, hash, text),
      runHandler: async (text) => {
        const log = rt.log.child({ campaign: s.campaignId, host: job.host, url });
        const hook = await runHandler(rt, job, s.handler!, s.handlerTimeoutMs, { res, contentType: res.headers['content-type'] ?? null, text, log });
        // null: the handler has no hook for this page's label (nor onPage).
        if (hook) rt.deps.metrics?.recordHandlerRun(hook.ok ? 'ok' : 'failed');
        return hook;
      },
    },
  );
}

/** Not modified since the capture the conditional request named: a revisit record referring to it, no body. */
async function storeNotModifiedOf(rt: WorkerRuntime, job: PageJob, attempt: Attempt, res: FetchResult): Promise<PageRecord> {
  const s = job.campaign.settings;
  const prev = attempt.previous!;
  const of = { uri: prev.r!.u, date: prev.r!.t, recordId: prev.r!.id, ...(prev.d ? { payloadDigest: prev.d } : {}) };
  const loc = await storeNotModified(res, job.entry.url, of, await rt.outputs.warc(s.output.dir, s.campaignId, s.output), s.output.warcKeepSecrets);
  return {
    outcome: OUTCOME.notModified,
    counted: 'fetched',
    requested: true,
    fields: {
      status: res.status,
      contentType: res.headers['content-type'] ?? null,
      bytes: res.body.length,
      fetchedAt: new Date(res.startedAt).toISOString(),
      fetchMs: res.endedAt - res.startedAt,
      warc: { file: loc.file, offset: loc.offset, length: loc.length },
      revisit: { url: of.uri, date: of.date, recordId: of.recordId },
    },
    seen: { status: 304, ...validatorsOf(res) },
  };
}

/** A revisit campaign takes a sitemap's word for how often its pages change, until it has seen for itself. */
async function hintSitemapRevisits(rt: WorkerRuntime, job: PageJob, listed: { url: string; lastmod?: string; changefreq?: string }[]): Promise<void> {
  if (listed.length === 0) return;
  const now = Date.now();
  const hints = listed.flatMap((h) => {
    const ms = hostKey(h.url) === job.host ? sitemapHintMs(h, now, job.campaign.settings.revisit) : null;
    return ms === null ? [] : [{ fp: urlFingerprint(h.url), intervalMs: ms }];
  });
  await hintRevisits(rt.deps.redis, job.campaign.key, job.host, hints);
}

/**
 * The page's candidates through depth, scope and trap rules: other hosts'
 * URLs are enqueued now and the hosts nobody is consuming marked ready here,
 * before the commit (into `woken`, for the session to nudge and wake); its own
 * links come back for the commit.
 */
async function route(rt: WorkerRuntime, job: PageJob, candidates: Candidate[], hostRequests: number | undefined, woken: WokenHosts): Promise<Routed> {
  const max = job.campaign.settings.budgets.maxPagesPerHost;
  const ownHostBudgetLeft = max === null ? undefined : max - (hostRequests ?? 0) - 1;
  // A page's links (its own and its handler's) are capped; a sitemap's are held by the per-host frontier bound instead.
  const maxLinks = (job.entry.kind ?? 'page') === 'page' ? job.campaign.settings.budgets.maxLinksPerPage : undefined;
  const routed = await routeCandidates(
    rt,
    job.campaign,
    job.host,
    job.entry.url,
    candidates,
    async (hs) => {
      woken.add(hs, await new CampaignHosts(rt.deps.redis, job.campaign.key).markReady(hs));
    },
    { ownHostBudgetLeft, maxLinks },
  );
  return withoutDisallowedOwnLinks(job, routed);
}

/**
 * With a page budget per host, a host's frontier holds only what the
 * budget can still fetch (src/redis/frontier.ts): its own links robots.txt
 * disallows would take that room and then be skipped unrequested, turning
 * allowed links away for good. They are dropped here, counted in the
 * index line's rejectedLinks (ROBOTS_DISALLOWED); without a host budget
 * they are queued and recorded robots-disallowed as before.
 */
function withoutDisallowedOwnLinks(job: PageJob, routed: Routed): Routed {
  const allows = job.allowedByRobots;
  if (job.campaign.settings.budgets.maxPagesPerHost === null || !allows) return routed;
  // Only pages take the budget's room; other kinds are recorded robots-disallowed where they are fetched.
  const own = routed.own.filter((i) => (i.kind ?? 'page') !== 'page' || allows(i.url));
  const dropped = routed.own.length - own.length;
  if (dropped === 0) return routed;
  const rejected = routed.rejectedLinks ?? { counts: {}, samples: [] };
  return { ...routed, own, rejectedLinks: { ...rejected, counts: { ...rejected.counts, ROBOTS_DISALLOWED: (rejected.counts.ROBOTS_DISALLOWED ?? 0) + dropped } } };
}

/** The store stage, its writers and payload index from the runtime. */
async function store(rt: WorkerRuntime, job: PageJob, attempt: Attempt, res: FetchResult, c: ClassifiedPage): Promise<Stored> {
  const s = job.campaign.settings;
  return storeStage(
    {
      url: job.entry.url,
      fp: attempt.target.fp,
      attemptId: attempt.target.attemptId,
      campaignId: s.campaignId,
      label: job.entry.label ?? null,
      response: res,
      candidates: c.candidates,
      hops: job.entry.hops ?? impliedHops(job.entry.depth),
      referrer: job.entry.referrer,
      duplicateOf: c.duplicateOf,
      canonical: c.canonical,
      contentHash: c.common.contentHash ?? undefined,
      // The content index's verdict is kept per URL: only a first visit's first attempt may rely on it.
      firstLook: c.contentChecked && job.attempts === 1 && attempt.schedule === null,
      ownCopy: c.contentChecked && attempt.schedule === null,
      items: c.hook?.ok ? c.hook.output.items : [],
      keepSecrets: s.output.warcKeepSecrets,
    },
    {
      warc: await rt.outputs.warc(s.output.dir, s.campaignId, s.output),
      payloads: s.content.dedup !== 'off' ? new PayloadIndex(rt.deps.redis, job.campaign.key) : null,
      dataset: () => rt.outputs.dataset(s.output.dir, s.output),
      signal: job.signal,
    },
  );
}

/** What a stored response commits: its verdict, its index fields, its own links and, for a revisit, what it saw. */
function pageRecord(job: PageJob, attempt: Attempt, res: FetchResult, c: ClassifiedPage, routed: Routed, stored: Stored): PageRecord {
  const { loc, revisitOf } = stored;
  const { verdict, hook } = c;
  // The full capture a later 304 refers to: this response, or the record an identical-payload revisit points at.
  const seen: Observation | undefined = attempt.schedule
    ? {
        status: res.status,
        ...validatorsOf(res),
        digest: c.ok && res.body.length > 0 && !res.truncated ? stored.digest || payloadDigestOf(res.body) : null,
        simhash: c.simhash,
        ref: revisitOf ? { u: revisitOf.uri, t: revisitOf.date, id: revisitOf.recordId } : { u: job.entry.url, t: new Date(res.startedAt).toISOString(), id: loc.recordId },
      }
    : undefined;
  return {
    outcome: verdict.outcome,
    counted: verdict.counted,
    requested: true,
    fields: {
      ...c.common,
      ...(c.redirectTo !== undefined ? { redirectTo: c.redirectTo } : {}),
      ...(verdict.error ? { error: verdict.error } : {}),
      warc: { file: loc.file, offset: loc.offset, length: loc.length },
      ...(revisitOf ? { revisit: { url: revisitOf.uri, date: revisitOf.date, recordId: revisitOf.recordId } } : {}),
      ...(hook ? { items: hook.ok ? hook.output.items.length : 0 } : {}),
      ...(c.canonical ? { canonical: c.canonical } : {}),
      ...(c.duplicateOf ? { duplicateOf: c.duplicateOf } : {}),
      ...(routed.rejectedLinks ? { rejectedLinks: routed.rejectedLinks } : {}),
      ...(c.linksDropped + routed.linksDropped > 0 ? { linksDropped: c.linksDropped + routed.linksDropped } : {}),
      ...(c.sitemap ? { sitemap: { ...c.sitemap, added: routed.own.length } } : {}),
      ...(c.feed ? { feed: { ...c.feed, added: routed.own.length } } : {}),
      ...(c.embedsDropped > 0 ? { embedsDropped: c.embedsDropped } : {}),
    },
    links: routed.own,
    seen,
  };
}

function validatorsOf(res: FetchResult): { etag: string | null; lastModified: string | null } {
  return { etag: res.headers.etag ?? null, lastModified: res.headers['last-modified'] ?? null };
}

type Committed = Awaited<ReturnType<typeof commitPage>>;
type ClassifiedPage = Extract<Classified, { kind: 'page' }>;

function done(job: PageJob, c: Committed): PageResult {
  return { kind: 'done', url: job.entry.url, ...c };
}

/** A new attempt at the job's URL: its id, and its revisit state. */
async function attemptOf(rt: WorkerRuntime, job: PageJob): Promise<Attempt> {
  const s = job.campaign.settings;
  const fp = urlFingerprint(job.entry.url);
  const schedule = s.revisit?.enabled ? new RevisitSchedule(rt.deps.redis, job.campaign.key, job.host) : null;
  return {
    // This attempt's id: in its index line and, if its commit is the one that counts, stored by the commit (src/storage/seal.ts keeps that line only).
    target: { campaignId: s.campaignId, host: job.host, member: job.member, entry: job.entry, fp, attemptId: newAttemptId() },
    schedule,
    previous: schedule ? await schedule.meta(fp) : null,
  };
}

/** The commit stage's dependencies, from the worker's runtime. */
function commitDeps(rt: WorkerRuntime, job: PageJob, attempt: Attempt): CommitDeps {
  const s = job.campaign.settings;
  const schedule = attempt.schedule;
  const keepUndo = parseOutputLocation(s.output.dir).kind === 's3' && !s.revisit?.enabled;
  return {
    index: { append: async (e) => (await rt.outputs.index(s.output.dir, s.output)).append(e) },
    frontier: {
      assertOwner: () => job.frontier.assertOwner(),
      // Links enter a host's frontier only while its budgets can still fetch them (src/redis/frontier.ts).
      // An output in a bucket keeps what undoes the commit until a seal finds its line there: a worker
      // whose disk is lost before it uploaded the line then has its page fetched again (activities/requeue-lost.ts).
      // Not for a revisit campaign, whose commits move URLs onto its schedule instead.
      commit: (member, counted, bytes, links, at) => job.frontier.commit(member, counted, bytes, links, keepUndo ? { ...at, keepUndo } : at, frontierBounds(s.budgets)),
    },
    revisit: schedule ? { settings: s.revisit, previous: attempt.previous, set: (member, fp, plan) => schedule.set(member, fp, plan.intervalMs, plan.meta, plan.verdict) } : null,
    metrics: rt.deps.metrics,
    log: rt.log.child({ campaign: s.campaignId, host: job.host, url: job.entry.url }),
  };
}

/**
 * An attempt's id: 48 random bits, unique among the few attempts one URL
 * ever gets (it only has to tell them apart), short in Redis and the index.
 */
export function newAttemptId(): string {
  // Drawn from a pool filled 512 ids at a time: one call into the CSPRNG per page cost more than the rest of the id.
  if (attemptPoolAt + ATTEMPT_ID_BYTES > attemptPool.length) {
    randomFillSync(attemptPool);
    attemptPoolAt = 0;
  }
  const id = attemptPool.toString('base64url', attemptPoolAt, attemptPoolAt + ATTEMPT_ID_BYTES);
  attemptPoolAt += ATTEMPT_ID_BYTES;
  return id;
}

const ATTEMPT_ID_BYTES = 6;
const attemptPool = Buffer.alloc(ATTEMPT_ID_BYTES * 512);
let attemptPoolAt = attemptPool.length;

/**
 * The next URL of a host that may not be fetched at all, recorded without a request: robots.txt
 * kept failing (RFC 9309: crawl nothing), or the host's address is one the campaign refuses.
 */
export async function recordUnfetched(rt: WorkerRuntime, job: PageJob, robots: Exclude<RobotsVerdict, { kind: 'wait' }>): Promise<void> {
  if (robots.kind === 'unavailable') {
    await recordWithoutFetch(rt, job, OUTCOME.robotsUnavailable, 'skipped', {
      code: robots.code,
      message: `robots.txt kept failing (${robots.detail}): RFC 9309 says crawl nothing`,
    });
  } else {
    await recordWithoutFetch(rt, job, OUTCOME.refused, 'failed', {
      code: PAGE_CODE.addressRefused,
      message: `${job.host} resolves to an address this campaign refuses (private, loopback, link-local or metadata): ${robots.refused}`,
    });
  }
}

/** A URL finished without a request (its host may not be fetched at all): an index line and the commit. */
async function recordWithoutFetch(
  rt: WorkerRuntime,
  job: PageJob,
  outcome: IndexOutcome,
  counted: 'fetched' | 'failed' | 'skipped',
  error: { code: string; message: string },
): Promise<void> {
  const attempt = await attemptOf(rt, job);
  await commitPage(commitDeps(rt, job, attempt), attempt.target, { outcome, counted, requested: false, fields: { error } });
}

/**
 * The URL keeps failing for a reason other than the network (a parser bug,
 * storage that cannot be written, a worker that died on it every time): it
 * is recorded as failed with the cause, so its host goes on. The index line
 * is written if the index can be written at all; a revisit URL keeps its
 * interval (the due-move took it off, and only a recorded visit puts it back).
 */
export async function recordInternalError(rt: WorkerRuntime, job: PageJob, message: string): Promise<PageResult> {
  const attempt = await attemptOf(rt, job);
  const error = { code: PAGE_CODE.internalError, message: message.slice(0, 2000) };
  const c = await commitPage(commitDeps(rt, job, attempt), attempt.target, { outcome: OUTCOME.error, counted: 'failed', requested: true, fields: { error }, indexMayFail: true });
  rt.log.error('page failed for good', { url: job.entry.url, error: error.message });
  return done(job, c);
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
  p: { res: PageResponse; contentType: string | null; text: string; log: ReturnType<WorkerRuntime['log']['child']> },
): Promise<(HookRun & { filter?: (url: string) => boolean }) | null> {
  const handler = await loadHandler(spec);
  const log = handlerLog(p.log, { label: job.entry.label ?? null });
  const input: HookInput = {
    url: job.entry.url,
    finalUrl: p.res.finalUrl,
    depth: job.entry.depth,
    label: job.entry.label ?? null,
    status: p.res.status,
    headers: p.res.headers as Record<string, string>,
    contentType: p.contentType,
    body: p.res.body,
    text: p.text,
    log,
  };
  const leave = rt.loopWatch.enter(job.entry.url);
  let run: HookRun | null;
  try {
    run = await runHook(handler, input, timeoutMs);
  } finally {
    leave();
  }
  // What the page's onRender returned in the browser (src/browser/page-hook.ts) joins onPage's.
  run = withRenderHook(run, p.res.rendered?.hook, () => pageContext(input));
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

/** Exact and near-duplicate check against every page of the campaign so far (shared by all workers in Redis). */
async function checkDuplicate(rt: WorkerRuntime, campaign: CampaignRuntime, url: string, contentHash: string, text: string | undefined): Promise<IndexEntry['duplicateOf']> {
  const c = campaign.settings.content;
  if (c.dedup === 'off') return undefined;
  // Very short texts collide by chance; only the exact check applies to them.
  const simhash = c.dedup === 'near' && text && hasWords(text, MIN_SIMHASH_WORDS) ? simhash64(text) : null;
  const verdict = await new ContentIndex(rt.deps.redis, campaign.key, { maxDistance: c.maxSimhashDistance }).check({ url, exactHash: contentHash, simhash });
  if (verdict.kind === 'exact-duplicate') return { url: verdict.of, kind: 'exact', distance: 0 };
  if (verdict.kind === 'near-duplicate') return { url: verdict.of, kind: 'near', distance: verdict.distance };
  return undefined;
}
