import { ApplicationFailure, Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { isFetchError } from '../src/http/fetch-error';
import type { FetchResult } from '../src/http/http-client';
import { parseRetryAfter } from '../src/http/retry-after';
import { extractLinks } from '../src/parse/links';
import { decodeBody, isHtml } from '../src/parse/decode';
import { reserveBudget } from '../src/redis/campaign-store';
import { Frontier, type EnqueueItem } from '../src/redis/frontier';
import { HostClock } from '../src/redis/host-clock';
import { contentHashOf, type IndexEntry } from '../src/storage/index-writer';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey } from '../src/url/normalize';
import { urlsDiscoveredSignal } from '../workflows/messages';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import type { CrawlStepInput, CrawlStepResult } from './types';

/** Cap on a server's Retry-After, so one header cannot park a host for days. */
const MAX_RETRY_AFTER_MS = 60 * 60_000;
const HEARTBEAT_MS = 3_000;

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
    const campaign = await rt.campaign(input.campaignKey, input.configVersion);
    const s = campaign.settings;
    const frontier = new Frontier(rt.deps.redis, input.campaignKey, input.host);
    const claimed = await frontier.claim();
    if (!claimed) return { kind: 'empty' };
    const { member, entry } = claimed;
    const { url } = entry;
    const fp = urlFingerprint(url);
    const out = await rt.outputs.get(s.output.dir, s.campaignId);

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
      const c = await frontier.commit(member, counted, extra.bytes ?? 0, links);
      return { kind: 'done', url, outcome, status: extra.status ?? null, bytes: extra.bytes ?? 0, requested, remaining: c.remaining, discoveredHosts };
    };

    let allowedByRobots: (u: string) => boolean = () => true;
    if (s.politeness.respectRobots) {
      if (input.robotsUnavailable) {
        return record('robots-unavailable', 'skipped', { requested: false, error: { code: 'ROBOTS_UNAVAILABLE', message: 'robots.txt kept failing (5xx/429/unreachable): RFC 9309 says crawl nothing' } });
      }
      const robots = (await rt.robots.get(input.host))?.parsed;
      // Expired from the shared cache (24 h): the workflow reloads it first.
      if (!robots) return { kind: 'wait', waitMs: 0, reason: 'robots.txt must be reloaded' };
      const rules = robots.rulesFor(s.politeness.userAgent);
      allowedByRobots = (u) => rules.isAllowed(u);
      if (!allowedByRobots(url)) return record('robots-disallowed', 'skipped', { requested: false });
    }

    if (s.budgets.maxPages !== null && !(await reserveBudget(rt.deps.redis, input.campaignKey, fp, s.budgets.maxPages))) {
      return { kind: 'budget-exhausted', url };
    }

    const clock = new HostClock(rt.deps.redis, input.host);
    const owner = `${input.campaignKey}|${fp}`;
    const wait = await clock.acquire(owner, s.fetch.totalTimeoutMs + input.delayMs + 5_000, input.delayMs);
    if (wait > 0) return { kind: 'wait', waitMs: wait, reason: 'host clock: another request to this host is too recent' };

    const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_MS);
    let res: FetchResult;
    try {
      res = await campaign.http.fetch(url, {
        // Same-host redirects are followed here; others go to their host's frontier.
        followRedirect: (_from, to) => sameHost(to, input.host) && allowedByRobots(to),
        signal: ctx.cancellationSignal,
      });
    } catch (err) {
      clearInterval(heartbeat);
      await clock.release(owner, input.delayMs);
      if (!isFetchError(err)) throw err;
      if (err.retryable && ctx.info.attempt <= s.fetch.maxRetries) {
        throw ApplicationFailure.create({
          message: `${err.code} fetching ${url}: ${err.message}`,
          type: 'FetchRetryable',
          details: [{ url, code: err.code }],
          nextRetryDelay: backoffMs(ctx.info.attempt, input.delayMs),
        });
      }
      return record('error', 'failed', { requested: true, error: { code: err.code, message: err.message } });
    }
    clearInterval(heartbeat);

    const retryAfter = parseRetryAfter(res.headers['retry-after']);
    const overloaded = res.status === 429 || res.status >= 500;
    // Retry-After applies to the whole host: it goes on the shared clock.
    const hostPause = overloaded && retryAfter !== null ? Math.max(input.delayMs, Math.min(retryAfter, MAX_RETRY_AFTER_MS)) : input.delayMs;
    await clock.release(owner, hostPause);
    if (overloaded && ctx.info.attempt <= s.fetch.maxRetries) {
      throw ApplicationFailure.create({
        message: `HTTP ${res.status} from ${url}`,
        type: 'HttpRetryable',
        details: [{ url, status: res.status }],
        nextRetryDelay: Math.max(hostPause, backoffMs(ctx.info.attempt, input.delayMs)),
      });
    }

    const contentType = res.headers['content-type'] ?? null;
    const loc = await out.warc.writeExchange({
      url,
      fetchedAt: new Date(res.startedAt),
      ip: res.remoteAddress ?? undefined,
      request: { method: 'GET', headers: res.requestHeaders, path: pathOf(res.finalUrl) },
      response: { status: res.status, statusText: res.statusText, headers: res.headers, body: res.body, truncated: res.truncated },
    });

    const { links, discovered } = await followLinks(rt, campaign, input, entry.depth, url, res, contentType);
    const outcome = res.stoppedRedirect ? 'redirect' : 'fetched';
    return record(outcome, 'fetched', {
      requested: true,
      status: res.status,
      contentType,
      bytes: res.body.length,
      contentHash: contentHashOf(res.body),
      fetchedAt: new Date(res.startedAt).toISOString(),
      fetchMs: res.endedAt - res.startedAt,
      warc: { file: loc.file, offset: loc.offset, length: loc.length },
      redirects: res.redirects.length ? res.redirects.map((r) => r.location) : undefined,
      truncated: res.truncated,
      links,
      discoveredHosts: discovered,
    });
  };
}

/**
 * Outlinks of an HTML page (or the target of a redirect we did not follow),
 * filtered by scope, depth and nofollow. Links for other hosts are enqueued
 * now and those hosts reported to the campaign; same-host links are
 * returned, to be enqueued atomically with the commit.
 */
async function followLinks(
  rt: WorkerRuntime,
  campaign: CampaignRuntime,
  input: CrawlStepInput,
  depth: number,
  url: string,
  res: FetchResult,
  contentType: string | null,
): Promise<{ links: EnqueueItem[]; discovered: number }> {
  const s = campaign.settings;
  let candidates: { url: string; depth: number }[] = [];
  if (res.stoppedRedirect) {
    // A redirect is not a link hop: the target keeps the depth.
    candidates = [{ url: res.stoppedRedirect.to, depth }];
  } else if (res.status >= 200 && res.status < 300 && isHtml(contentType)) {
    const page = extractLinks(decodeBody(res.body, contentType).text, res.finalUrl);
    if (!page.metaRobots.nofollow) candidates = page.links.filter((l) => !l.nofollow).map((l) => ({ url: l.url, depth: depth + 1 }));
  }
  const byHost = new Map<string, EnqueueItem[]>();
  for (const c of candidates) {
    if (s.budgets.maxDepth !== null && c.depth > s.budgets.maxDepth) continue;
    if (!campaign.scope.allows(c.url)) continue;
    let host: string;
    try {
      host = hostKey(c.url);
    } catch {
      continue;
    }
    const list = byHost.get(host) ?? [];
    list.push({ url: c.url, fp: urlFingerprint(c.url), depth: c.depth, referrer: url });
    byHost.set(host, list);
  }
  const own = byHost.get(input.host) ?? [];
  byHost.delete(input.host);
  const retried = Context.current().info.attempt > 1;
  const woken: string[] = [];
  await Promise.all(
    [...byHost].map(async ([host, items]) => {
      const added = await new Frontier(rt.deps.redis, input.campaignKey, host).enqueue(items);
      // On a retry, an earlier attempt may have enqueued without reporting.
      if (added > 0 || retried) woken.push(host);
    }),
  );
  if (woken.length > 0) {
    try {
      await rt.deps.temporal.workflow.getHandle(input.campaignWorkflowId).signal(urlsDiscoveredSignal, { hosts: woken.sort() });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      // The campaign is over; nobody will crawl those hosts.
    }
  }
  return { links: own, discovered: woken.length };
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
