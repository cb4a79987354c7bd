import { Context } from '@temporalio/activity';
import { crawlDelayMs, frontierPriority } from '../src/config/campaign';
import { isFetchError } from '../src/http/fetch-error';
import { parseRetryAfter } from '../src/http/retry-after';
import { HostClock } from '../src/redis/host-clock';
import { parseRobotsTxt, RobotsTxt } from '../src/robots/robots-txt';
import type { StoredRobots } from '../src/robots/robots-store';
import { Frontier } from '../src/redis/frontier';
import { hostKeys } from '../src/redis/keys';
import { urlFingerprint } from '../src/url/fingerprint';
import { sitemapSeeds } from './discovery';
import type { CampaignRuntime, WorkerRuntime } from './runtime';

import type { DomainRef, LoadRobotsResult } from './types';

/** How long a refused host stays refused for a campaign (longer than any sane campaign run; a restart re-checks). */
const REFUSED_TTL_MS = 7 * 24 * 60 * 60_000;

/**
 * Makes sure robots.txt for the host is known (from the shared cache, or
 * fetched now under the host's politeness clock) and returns its
 * Crawl-delay for our user agent. RFC 9309 §2.3.1: 2xx = the file's rules,
 * 4xx (but 429) = no restrictions, 5xx / 429 / unreachable = unavailable.
 */
export function loadRobotsActivity(rt: WorkerRuntime) {
  return async function loadRobots(input: DomainRef): Promise<LoadRobotsResult> {
    const campaign = await rt.campaign(input.campaignKey, input.configVersion);
    const agent = campaign.settings.politeness.userAgent;
    const url = await robotsUrl(rt, input);
    const cached = await rt.robots.get(input.host);
    if (cached?.parsed) {
      await enqueueSitemaps(rt, campaign, input, url, cached.parsed.sitemaps);
      return { kind: 'ok', crawlDelaySec: cached.parsed.rulesFor(agent).crawlDelaySec ?? null, waitMs: 0, detail: 'cached', fetched: false };
    }
    const minDelay = campaign.settings.politeness.minDelayMs;
    const clock = new HostClock(rt.deps.redis, await campaign.clockKeys.keyFor(input.host));
    const owner = `robots|${input.campaignKey}`;
    const wait = await clock.acquire(owner, campaign.settings.fetch.totalTimeoutMs + minDelay, minDelay);
    if (wait > 0) return { kind: 'wait', crawlDelaySec: null, waitMs: wait, detail: 'host clock busy', fetched: false };

    let value: StoredRobots;
    let code = '';
    let hostPause = 0;
    let robots: RobotsTxt | null = null;
    try {
      const res = await campaign.http.fetch(url, {
        accept: 'text/plain,*/*;q=0.5',
        signal: Context.current().cancellationSignal,
      });
      const now = new Date().toISOString();
      if (res.status >= 200 && res.status < 300) {
        robots = parseRobotsTxt(res.body);
        value = { state: 'ok', robots: robots.toJSON(), status: res.status, fetchedAt: now };
      } else if (res.status >= 400 && res.status < 500 && res.status !== 429) {
        robots = RobotsTxt.allowAll();
        value = { state: 'ok', robots: robots.toJSON(), status: res.status, fetchedAt: now };
      } else {
        value = { state: 'unavailable', detail: `HTTP ${res.status}`, fetchedAt: now };
        code = `HTTP_${res.status}`;
        const retryAfter = parseRetryAfter(res.headers['retry-after']);
        if (retryAfter !== null) hostPause = retryAfter;
      }
    } catch (err) {
      if (!isFetchError(err)) throw err;
      if (err.code === 'ADDRESS_REFUSED') {
        // This campaign may not talk to the host at all: its steps record
        // every URL as refused. Nothing goes in the shared robots cache, since
        // another campaign's address policy may allow the host.
        await clock.release(owner, 0);
        await rt.deps.redis.set(hostKeys(input.campaignKey, input.host).refused, err.message, 'PX', REFUSED_TTL_MS);
        return { kind: 'ok', crawlDelaySec: null, waitMs: 0, detail: err.message, fetched: false };
      }
      value = { state: 'unavailable', detail: `${err.code}: ${err.message}`, fetchedAt: new Date().toISOString() };
      code = err.code;
    }
    const crawlDelaySec = robots?.rulesFor(agent).crawlDelaySec ?? null;
    // The next request to this host waits the delay robots.txt just asked
    // for, or the Retry-After of a 429/5xx answer if that is longer.
    await clock.release(owner, Math.max(hostPause, crawlDelayMs(campaign.settings.politeness, crawlDelaySec)));
    await rt.robots.put(input.host, value);
    rt.deps.metrics?.recordRobots(value.state === 'unavailable' ? 'unavailable' : value.status !== null && value.status >= 400 ? 'not-found' : 'ok');
    if (value.state === 'unavailable') return { kind: 'unavailable', crawlDelaySec: null, waitMs: 0, detail: value.detail, code, fetched: true };
    await enqueueSitemaps(rt, campaign, input, url, robots?.sitemaps ?? []);
    return { kind: 'ok', crawlDelaySec, waitMs: 0, detail: `HTTP ${value.status}`, fetched: true };
  };
}

/** Sitemaps go in the host's frontier like pages, so their fetches share the host's politeness, retries and storage. */
async function enqueueSitemaps(rt: WorkerRuntime, campaign: CampaignRuntime, input: DomainRef, robotsTxtUrl: string, listed: readonly string[]): Promise<void> {
  const origin = new URL(robotsTxtUrl).origin;
  const urls = sitemapSeeds(campaign.settings, origin, listed).filter((u) => campaign.scope.allows(u));
  if (urls.length === 0) return;
  await new Frontier(rt.deps.redis, input.campaignKey, input.host).enqueue(
    urls.map((u) => ({ url: u, fp: urlFingerprint(u), depth: 0, referrer: robotsTxtUrl, kind: 'sitemap' as const, priority: frontierPriority(u, campaign.settings) })),
  );
}

/** robots.txt at the root of the host, on the scheme of the host's next URL (http when the frontier is empty). */
async function robotsUrl(rt: WorkerRuntime, input: DomainRef): Promise<string> {
  const head = await new Frontier(rt.deps.redis, input.campaignKey, input.host).peek();
  const scheme = head?.url.startsWith('https:') ? 'https' : 'http';
  return `${scheme}://${input.host}/robots.txt`;
}
