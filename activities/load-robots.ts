import { Context } from '@temporalio/activity';
import { crawlDelayMs } from '../src/config/campaign';
import { isFetchError } from '../src/http/fetch-error';
import { HostClock } from '../src/redis/host-clock';
import { parseRobotsTxt, RobotsTxt } from '../src/robots/robots-txt';
import type { StoredRobots } from '../src/robots/robots-store';
import { Frontier } from '../src/redis/frontier';
import type { WorkerRuntime } from './runtime';
import type { DomainRef, LoadRobotsResult } from './types';

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
    const cached = await rt.robots.get(input.host);
    if (cached?.parsed) {
      return { kind: 'ok', crawlDelaySec: cached.parsed.rulesFor(agent).crawlDelaySec ?? null, waitMs: 0, detail: 'cached', fetched: false };
    }
    const minDelay = campaign.settings.politeness.minDelayMs;
    const clock = new HostClock(rt.deps.redis, input.host);
    const owner = `robots|${input.campaignKey}`;
    const wait = await clock.acquire(owner, campaign.settings.fetch.totalTimeoutMs + minDelay, minDelay);
    if (wait > 0) return { kind: 'wait', crawlDelaySec: null, waitMs: wait, detail: 'host clock busy', fetched: false };

    let value: StoredRobots;
    let robots: RobotsTxt | null = null;
    try {
      const res = await campaign.http.fetch(await robotsUrl(rt, input), {
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
      }
    } catch (err) {
      if (!isFetchError(err)) throw err;
      value = { state: 'unavailable', detail: `${err.code}: ${err.message}`, fetchedAt: new Date().toISOString() };
    }
    const crawlDelaySec = robots?.rulesFor(agent).crawlDelaySec ?? null;
    // The next request to this host waits the delay robots.txt just asked for.
    await clock.release(owner, crawlDelayMs(campaign.settings.politeness, crawlDelaySec));
    await rt.robots.put(input.host, value);
    if (value.state === 'unavailable') return { kind: 'unavailable', crawlDelaySec: null, waitMs: 0, detail: value.detail, fetched: true };
    return { kind: 'ok', crawlDelaySec, waitMs: 0, detail: `HTTP ${value.status}`, fetched: true };
  };
}

/** robots.txt at the root of the host, on the scheme of the host's next URL (http when the frontier is empty). */
async function robotsUrl(rt: WorkerRuntime, input: DomainRef): Promise<string> {
  const head = await new Frontier(rt.deps.redis, input.campaignKey, input.host).peek();
  const scheme = head?.url.startsWith('https:') ? 'https' : 'http';
  return `${scheme}://${input.host}/robots.txt`;
}
