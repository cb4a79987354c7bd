// robots.txt for a host session: from the shared cache, or fetched now under
// the host clock (every redirect hop under its own host's clock). RFC 9309
// §2.3.1: 2xx = the file's rules, 4xx (but 429) = no restrictions, 5xx / 429
// / unreachable = unavailable, retried a bounded number of times, after
// which the host is crawled not at all.
import { setMaxListeners } from 'node:events';
import { ROBOTS_RETRY, robotsBackoffMs } from '../src/config/retry-policy';
import { crawlDelayMs, frontierPriority } from '../src/config/campaign';
import { isFetchError } from '../src/http/fetch-error';
import { parseRetryAfter } from '../src/http/retry-after';
import { acquireWithin, HostClock } from '../src/redis/host-clock';
import { Frontier, frontierBounds } from '../src/redis/frontier';
import { hostKeys } from '../src/redis/keys';
import { allowedInAnyQueryOrder, parseRobotsTxt, RobotsTxt } from '../src/robots/robots-txt';
import { ROBOTS_TTL_MS, robotsSource, type StoredRobots } from '../src/robots/robots-store';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey } from '../src/url/normalize';
import { pageBudgetSpent, sitemapSeeds } from './discovery';
import type { RobotsVerdict } from './robots-verdict';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { frontierOf } from './frontier-of';

/** How long a refused host stays refused for a campaign (longer than any sane campaign run; a restart re-checks). */
const REFUSED_TTL_MS = 7 * 24 * 60 * 60_000;
/** robots.txt that keeps failing (5xx, 429, network, timeout) is tried this often before the host is crawled not at all. */
export const ROBOTS_ATTEMPTS = ROBOTS_RETRY.attempts;
/** RFC 9309 allows following at least five redirects for robots.txt. */
const ROBOTS_MAX_HOPS = 5;

export interface RobotsContext {
  campaign: CampaignRuntime;
  host: string;
  /** Longest wait for a host clock spent inside the session. */
  maxWaitMs: number;
  signal: AbortSignal;
  /** A dispatch's warm-up: it holds the clock under an owner of its own (a session with the session owner could take it over after the delay). */
  warmUp?: boolean;
  /**
   * The host has never had a session in this campaign (the dispatch's first
   * warm-up of it): nothing is settled about it yet, so the check before
   * taking the clock is skipped (four Redis reads and a cache lookup a new
   * host); the one made once the clock is held still finds a file another
   * campaign cached.
   */
  unseen?: boolean;
  /**
   * For another host's request of a rendered page (activities/render-hosts.ts): its owner on the
   * clock is its own, its sitemaps are left to the host's own session (a host with no session of
   * its own would hold them in a frontier nobody reads), and robots.txt is asked on this scheme
   * when the host has nothing queued.
   */
  forPage?: {
    scheme: 'http' | 'https';
    /** The clock key the page's session holds: a robots.txt request on that clock is one of the page's requests, sent without taking it again. */
    heldClock: string;
  };
}

/**
 * What is already settled about the host's robots.txt without a request: an
 * address this campaign refuses, a file given up on, a back-off after a
 * failed fetch (it holds for whoever asks next: a warm-up's failure, a
 * session on another worker), or the shared cache. Null: fetch it.
 */
async function knownVerdict(rt: WorkerRuntime, campaign: CampaignRuntime, host: string, url: string, sitemaps = true): Promise<RobotsVerdict | null> {
  const redis = rt.deps.redis;
  const hk = hostKeys(campaign.key, host);
  const [refused, [givenUp, causeRaw, failsRaw], retryIn, redirectRefused] = await Promise.all([
    redis.get(hk.refused),
    redis.hmget(hk.robots, 'given-up', 'cause', 'fails'),
    redis.pttl(hk.robotsRetry),
    redis.exists(hk.robotsRedirectRefused),
  ]);
  if (refused) return { kind: 'ok', allows: null, crawlDelaySec: null, refused };
  if (redirectRefused) return { kind: 'ok', allows: null, crawlDelaySec: null };
  if (givenUp === '1') {
    const cause = causeRaw ? (JSON.parse(causeRaw) as { code: string; detail: string }) : { code: 'ROBOTS_UNAVAILABLE', detail: 'robots.txt kept failing' };
    return { kind: 'unavailable', ...cause };
  }
  // PTTL: -2 without a back-off, -1 never (the key is always set with one).
  if (retryIn > 0) return { kind: 'wait', waitMs: retryIn, why: `robots.txt unavailable, retry ${failsRaw ?? 1}/${ROBOTS_ATTEMPTS - 1}`, backingOff: true };
  const cached = await rt.robots.get(robotsSource(url, campaign.resolve));
  if (!cached?.parsed) return null;
  if (sitemaps) await enqueueSitemapsOnce(rt, campaign, host, url, cached.parsed.sitemaps);
  const rules = cached.parsed.rulesFor(campaign.settings.politeness.userAgent);
  return { kind: 'ok', allows: (u) => allowedInAnyQueryOrder(rules, u), crawlDelaySec: rules.crawlDelaySec ?? null };
}

/** A clock the caller's session holds already (activities/render-hosts.ts): taking and giving it back are the session's, not this request's. */
class HeldClock extends HostClock {
  override acquire(): Promise<number> {
    return Promise.resolve(0);
  }
  override async release(): Promise<void> {}
  override async abandon(): Promise<void> {}
}

/** Rejects when `signal` aborts: a session cancelled while it waits for a warm-up stops waiting. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/** Warm-ups in flight per worker at most: beyond it a host's first session fetches its robots.txt itself. */
export const MAX_ROBOTS_WARMUPS = 500;

/**
 * Fetches a host's robots.txt as soon as its workflow is dispatched, without
 * waiting for its first session: on a loaded Temporal server a host's first
 * session starts seconds after its dispatch, and the host's first page must
 * wait its delay after robots.txt anyway, so the two waits now overlap
 * instead of adding up. The request is an ordinary one (host clock, cache,
 * sitemaps); it is skipped when the clock is busy, and the session on this
 * worker takes its verdict instead of asking again. Never throws.
 * `sessionHere`: the host's first workflow task was handed to this worker with its start (eager):
 * its first session runs here, maybe only after the warm-up has ended, and takes its connection.
 */
export function warmRobots(rt: WorkerRuntime, campaign: CampaignRuntime, host: string, unseen = false, sessionHere = false): void {
  const key = `${campaign.key}|${host}`;
  if (rt.draining || rt.robotsWarmups.size >= MAX_ROBOTS_WARMUPS || rt.robotsWarmups.has(key) || !campaign.settings.politeness.respectRobots) return;
  // Not AbortSignal.any([timeout, rt.closing.signal]): Node 20 keeps, in the worker's long-lived
  // closing signal, a reference to every signal made from it, never pruned: one per host warmed
  // up, for the worker's life (3,000 after bench (k)). A listener taken off again leaves nothing.
  const stop = new AbortController();
  const onClose = () => stop.abort(rt.closing.signal.reason);
  // One listener per warm-up in flight, up to MAX_ROBOTS_WARMUPS: not a leak (Node warns past 10).
  setMaxListeners(MAX_ROBOTS_WARMUPS + 1, rt.closing.signal);
  rt.closing.signal.addEventListener('abort', onClose, { once: true });
  const timer = setTimeout(() => stop.abort(new DOMException('robots.txt warm-up timed out', 'TimeoutError')), campaign.settings.fetch.robotsTimeoutMs * (ROBOTS_MAX_HOPS + 1));
  timer.unref();
  const p = ensureRobots(rt, { campaign, host, maxWaitMs: 0, signal: stop.signal, warmUp: true, unseen })
    .catch((err: unknown): RobotsVerdict => {
      rt.log.warn('robots.txt warm-up failed; the host session fetches it', { host, error: err instanceof Error ? err.message : String(err) });
      return { kind: 'wait', waitMs: 0, why: 'warm-up failed', backingOff: false };
    })
    .finally(() => {
      clearTimeout(timer);
      rt.closing.signal.removeEventListener('abort', onClose);
      // No session of the host here, nor one on its way (it runs on another worker, or goes through
      // the task queue): its connection is not kept alive for nothing (issue 27: in bench (l) the
      // dispatching worker otherwise held an idle pool and socket for every host it warmed up, for
      // the server's keep-alive time). A session that comes here after all opens its own.
      if (!sessionHere && !rt.hasSession(campaign.key, host)) campaign.http.releaseHost?.(host);
    });
  rt.robotsWarmups.set(key, p);
  void p.then((v) => settle(rt, key, campaign.version, v)).finally(() => rt.robotsWarmups.delete(key));
}

/** How long a warm-up's verdict waits for the host's session on this worker (a host's first task may wait that long on a loaded server). */
const SETTLED_MS = 60_000;

/**
 * Keeps a warm-up's verdict for the host's first session, which then asks Redis nothing about
 * robots.txt (issue 27: the frontier's head, four reads and the sitemaps flag, 6 commands a
 * host). It is what the session would have read: the host's robots.txt state changes only by
 * a fetch of the file (this module), and a fetch happens only when no verdict is known. A wait
 * is not kept (its time runs from when it was said), nor past the bound.
 */
function settle(rt: WorkerRuntime, key: string, version: number, verdict: RobotsVerdict): void {
  if (verdict.kind === 'wait') return;
  const now = Date.now();
  if (rt.robotsSettled.size >= MAX_ROBOTS_WARMUPS) for (const [k, s] of rt.robotsSettled) if (now - s.at >= SETTLED_MS) rt.robotsSettled.delete(k);
  if (rt.robotsSettled.size < MAX_ROBOTS_WARMUPS) rt.robotsSettled.set(key, { verdict, version, at: now });
}

/** The verdict a warm-up on this worker settled for the session, taken once; null when none (or it is too old, or of other settings). */
function takeSettled(rt: WorkerRuntime, ctx: RobotsContext): RobotsVerdict | null {
  if (ctx.forPage || ctx.warmUp) return null;
  const key = `${ctx.campaign.key}|${ctx.host}`;
  const s = rt.robotsSettled.get(key);
  if (!s) return null;
  rt.robotsSettled.delete(key);
  return Date.now() - s.at < SETTLED_MS && s.version === ctx.campaign.version ? s.verdict : null;
}

export async function ensureRobots(rt: WorkerRuntime, ctx: RobotsContext): Promise<RobotsVerdict> {
  const { campaign, host } = ctx;
  const warming = rt.robotsWarmups.get(`${campaign.key}|${host}`);
  if (warming) {
    const v = await Promise.race([warming, aborted(ctx.signal)]);
    // A busy clock (or a failed warm-up) is no verdict: ask as usual. A back-off is.
    if (v.kind !== 'wait' || v.backingOff) {
      // Taken from the warm-up itself: what it settled is not kept for another session.
      if (!ctx.forPage && !ctx.warmUp) rt.robotsSettled.delete(`${campaign.key}|${host}`);
      return v;
    }
  }
  const settled = takeSettled(rt, ctx);
  if (settled) return settled;
  if (!campaign.settings.politeness.respectRobots) {
    const refused = await rt.deps.redis.get(hostKeys(campaign.key, host).refused);
    return { kind: 'ok', allows: null, crawlDelaySec: null, ...(refused ? { refused } : {}) };
  }
  const url = await robotsUrl(rt, campaign.key, host, ctx.forPage?.scheme);
  const sitemaps = !ctx.forPage;
  const known = ctx.unseen ? null : await knownVerdict(rt, campaign, host, url, sitemaps);
  if (known) return known;
  const fetched = await fetchRobots(rt, ctx, url, sitemaps);
  return 'kind' in fetched ? fetched : verdictOf(rt, ctx, url, sitemaps, fetched);
}

/** What a fetch of robots.txt came to: the entry for the shared cache, the failure's code, a Retry-After for the host, the parsed file. */
interface FetchedRobots {
  value: StoredRobots;
  code: string;
  hostPause: number;
  robots: RobotsTxt | null;
}

/** One request for robots.txt (or a redirect hop of it), and what it came to; the clock and Redis are the caller's. */
type RobotsHop =
  | { kind: 'redirect'; to: string }
  /** The host (or a hop) is at an address the campaign refuses: the verdict, and what Redis keeps of it for the campaign. */
  | { kind: 'refused'; pauseMs: number; key: string; ttlMs: number; message: string; verdict: RobotsVerdict }
  | ({ kind: 'fetched' } & FetchedRobots);

/**
 * robots.txt fetched under its host's clock, each redirect hop under its own
 * host's clock: what it came to, or a verdict reached on the way (the clock is
 * busy, whoever held it settled the file, an address the campaign refuses).
 */
async function fetchRobots(rt: WorkerRuntime, ctx: RobotsContext, url: string, sitemaps: boolean): Promise<FetchedRobots | RobotsVerdict> {
  const { campaign, host } = ctx;
  const redis = rt.deps.redis;
  const s = campaign.settings;
  const minDelay = s.politeness.minDelayMs;
  const lease = s.fetch.robotsTimeoutMs + minDelay;
  for (let hop = 0, hopUrl = url; ; hop++) {
    const hopHost = hostKey(hopUrl);
    const clockKey = await campaign.clockKeys.keyFor(hopHost);
    const clock = clockKey === ctx.forPage?.heldClock ? new HeldClock(redis, clockKey) : new HostClock(redis, clockKey);
    const owner = `${ctx.warmUp ? 'robots-warm-up' : ctx.forPage ? 'robots-for-page' : 'robots'}|${campaign.key}|${host}`;
    const wait = await acquireWithin(clock, owner, lease, minDelay, ctx.maxWaitMs, ctx.signal);
    if (wait > 0) return { kind: 'wait', waitMs: wait, why: `host clock of ${hopHost} busy (robots.txt)`, backingOff: false };
    if (hop === 0) {
      // Whoever held the clock may have been fetching this very file (a
      // warm-up on another worker, another campaign) and settled it, or
      // failed and set a back-off: no second request either way.
      const settled = await knownVerdict(rt, campaign, host, url, sitemaps);
      if (settled) {
        await clock.abandon(owner);
        return settled;
      }
    }
    const got = await robotsHop(ctx, hopUrl, hop);
    if (got.kind === 'redirect') {
      await clock.release(owner, minDelay);
      hopUrl = got.to;
      continue;
    }
    if (got.kind === 'refused') {
      await clock.release(owner, got.pauseMs);
      await redis.set(got.key, got.message, 'PX', got.ttlMs);
      return got.verdict;
    }
    const crawlDelaySec = got.robots?.rulesFor(s.politeness.userAgent).crawlDelaySec ?? null;
    // The next request to this host waits the delay robots.txt just asked
    // for, or the Retry-After of a 429/5xx answer if that is longer.
    await clock.release(owner, Math.max(got.hostPause, crawlDelayMs(s.politeness, crawlDelaySec)));
    return { value: got.value, code: got.code, hostPause: got.hostPause, robots: got.robots };
  }
}

/** One request for robots.txt at `hopUrl`, its host's clock held. A cancellation, and an error that is no fetch failure, go up. */
async function robotsHop(ctx: RobotsContext, hopUrl: string, hop: number): Promise<RobotsHop> {
  const { campaign, host } = ctx;
  const s = campaign.settings;
  const hk = hostKeys(campaign.key, host);
  // robots.txt gets a shorter deadline than pages: a file that drips for
  // minutes must not hold its host (and a session slot) that long.
  const timeout = AbortSignal.timeout(s.fetch.robotsTimeoutMs);
  try {
    const res = await campaign.http.fetch(hopUrl, { accept: 'text/plain,*/*;q=0.5', followRedirect: () => false, signal: AbortSignal.any([ctx.signal, timeout]) });
    const now = new Date().toISOString();
    if (res.stoppedRedirect && hop < ROBOTS_MAX_HOPS) return { kind: 'redirect', to: res.stoppedRedirect.to };
    if (res.status >= 200 && res.status < 300) {
      const robots = parseRobotsTxt(res.body);
      return { kind: 'fetched', value: { state: 'ok', robots: robots.toJSON(), status: res.status, fetchedAt: now }, code: '', hostPause: 0, robots };
    }
    if ((res.status >= 400 && res.status < 500 && res.status !== 429) || res.stoppedRedirect) {
      // RFC 9309 §2.3.1.2: more redirects than followed = unavailable as in "not found", i.e. allow all.
      const robots = RobotsTxt.allowAll();
      return { kind: 'fetched', value: { state: 'ok', robots: robots.toJSON(), status: res.status, fetchedAt: now }, code: '', hostPause: 0, robots };
    }
    const retryAfter = parseRetryAfter(res.headers['retry-after']);
    const value: StoredRobots = { state: 'unavailable', detail: `HTTP ${res.status}`, fetchedAt: now };
    return { kind: 'fetched', value, code: `HTTP_${res.status}`, hostPause: retryAfter ?? 0, robots: null };
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    if (timeout.aborted) {
      const value: StoredRobots = {
        state: 'unavailable',
        detail: `ROBOTS_TIMEOUT: no complete robots.txt within ${s.fetch.robotsTimeoutMs} ms`,
        fetchedAt: new Date().toISOString(),
      };
      return { kind: 'fetched', value, code: 'ROBOTS_TIMEOUT', hostPause: 0, robots: null };
    }
    if (!isFetchError(err)) throw err;
    if (err.code === 'ADDRESS_REFUSED' && hop > 0) {
      // The host's robots.txt redirects to an address this campaign
      // refuses (a misconfigured proxy, a redirect to localhost): a
      // redirect it cannot follow, so RFC 9309 treats robots.txt as
      // unavailable as in "not found" (allow all). The host itself is
      // fine. Cached for this campaign only: another one's policy may follow it.
      const verdict: RobotsVerdict = { kind: 'ok', allows: null, crawlDelaySec: null };
      return { kind: 'refused', pauseMs: s.politeness.minDelayMs, key: hk.robotsRedirectRefused, ttlMs: ROBOTS_TTL_MS, message: err.message, verdict };
    }
    if (err.code === 'ADDRESS_REFUSED') {
      // This campaign may not talk to the host at all: its URLs are
      // recorded as refused. Nothing goes in the shared robots cache,
      // since another campaign's address policy may allow the host.
      const verdict: RobotsVerdict = { kind: 'ok', allows: null, crawlDelaySec: null, refused: err.message };
      return { kind: 'refused', pauseMs: 0, key: hk.refused, ttlMs: REFUSED_TTL_MS, message: err.message, verdict };
    }
    const value: StoredRobots = { state: 'unavailable', detail: `${err.code}: ${err.message}`, fetchedAt: new Date().toISOString() };
    return { kind: 'fetched', value, code: err.code, hostPause: 0, robots: null };
  }
}

/**
 * What a fetched robots.txt means for the host, kept in Redis: a failure counts toward giving up
 * (then the host is crawled not at all) and sets a back-off for whoever asks next; a file goes in
 * the shared cache, and its sitemaps into the host's frontier.
 */
async function verdictOf(rt: WorkerRuntime, ctx: RobotsContext, url: string, sitemaps: boolean, fetched: FetchedRobots): Promise<RobotsVerdict> {
  const { campaign, host } = ctx;
  const { value, code, hostPause, robots } = fetched;
  const redis = rt.deps.redis;
  const hk = hostKeys(campaign.key, host);
  rt.deps.metrics?.recordRobots(value.state === 'unavailable' ? 'unavailable' : value.status !== null && value.status >= 400 ? 'not-found' : 'ok');
  if (value.state === 'unavailable') {
    const fails = await redis.hincrby(hk.robots, 'fails', 1);
    if (fails >= ROBOTS_ATTEMPTS) {
      await redis.hset(hk.robots, 'given-up', '1', 'cause', JSON.stringify({ code, detail: value.detail }));
      return { kind: 'unavailable', code, detail: value.detail };
    }
    const waitMs = robotsBackoffMs(fails, Math.max(campaign.settings.politeness.minDelayMs, hostPause));
    await redis.set(hk.robotsRetry, String(fails), 'PX', waitMs);
    return { kind: 'wait', waitMs, why: `robots.txt unavailable (${value.detail}), retry ${fails}/${ROBOTS_ATTEMPTS - 1}`, backingOff: true };
  }
  await Promise.all([redis.hdel(hk.robots, 'fails'), redis.del(hk.robotsRetry)]);
  await rt.robots.put(robotsSource(url, campaign.resolve), value);
  if (sitemaps) await enqueueSitemapsOnce(rt, campaign, host, url, robots?.sitemaps ?? []);
  const rules = robots!.rulesFor(campaign.settings.politeness.userAgent);
  return { kind: 'ok', allows: (u) => allowedInAnyQueryOrder(rules, u), crawlDelaySec: rules.crawlDelaySec ?? null };
}

/**
 * Sitemaps go in the host's frontier like pages (their fetches share the
 * host's politeness, retries and storage), once per campaign. The flag that
 * says so is set after the enqueue, not before: a Redis crash that loses the
 * enqueue loses the flag with it (a later write), and the next session
 * enqueues again; the seen-set makes a second enqueue a no-op.
 */
async function enqueueSitemapsOnce(rt: WorkerRuntime, campaign: CampaignRuntime, host: string, robotsTxtUrl: string, listed: readonly string[]): Promise<void> {
  const hk = hostKeys(campaign.key, host);
  if ((await rt.deps.redis.hget(hk.robots, 'sitemaps')) !== null) return;
  const s = campaign.settings;
  // Past the page budget a sitemap could only list URLs nobody will request.
  if (await pageBudgetSpent(rt.deps.redis, campaign.key, s.budgets.maxPages)) return;
  const origin = new URL(robotsTxtUrl).origin;
  const candidates = sitemapSeeds(s, origin, listed);
  const allowed = await campaign.inScope(candidates);
  // scope.exclude holds sitemaps too (its includes do not: a sitemap is how included pages are found).
  const urls = candidates.filter((u, i) => allowed[i] && campaign.urlRules.verdict(u, 'list') === null);
  if (urls.length > 0) {
    // The bounds count these against budgets.maxSitemapsPerHost in Redis, with the index children they lead to.
    await frontierOf(rt, campaign, host).enqueue(
      urls.map((u) => ({ url: u, fp: urlFingerprint(u), depth: 0, referrer: robotsTxtUrl, kind: 'sitemap' as const, hops: 'P', priority: frontierPriority(u, s) })),
      frontierBounds(s.budgets),
    );
  }
  await rt.deps.redis.hset(hk.robots, 'sitemaps', '1');
}

/** robots.txt at the root of the host, on the scheme of the host's next URL (`fallback`, else http, when the frontier is empty). */
async function robotsUrl(rt: WorkerRuntime, campaignKey: string, host: string, fallback?: 'http' | 'https'): Promise<string> {
  const head = await new Frontier(rt.deps.redis, campaignKey, host).peek();
  const scheme = head ? (head.url.startsWith('https:') ? 'https' : 'http') : (fallback ?? 'http');
  return `${scheme}://${host}/robots.txt`;
}
