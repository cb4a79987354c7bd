// A host session that fetches nothing: it commits each URL of the host's
// frontier as a page of as many bytes as the host name is long, records the
// host, gives its slot up and nudges the campaign, exactly as
// activities/crawl-session.ts does around its fetches. Registered under the
// real activity's name, it lets the real campaign and host workflows run at
// a host count a real crawl could not reach in a test's time.
import { CampaignNudger } from '../../activities/nudge';
import type { WorkerRuntime } from '../../activities/runtime';
import type { HostStats, SessionInput, SessionResult } from '../../activities/types';
import { CampaignHosts } from '../../src/redis/campaign-hosts';
import { Frontier } from '../../src/redis/frontier';

export function standInSession(rt: WorkerRuntime) {
  return async function crawlSession(input: SessionInput): Promise<SessionResult> {
    const redis = rt.deps.redis;
    const frontier = new Frontier(redis, input.campaignKey, input.host);
    const hosts = new CampaignHosts(redis, input.campaignKey);
    let pages = 0;
    for (let claim = await frontier.claim(); claim; claim = await frontier.claim()) {
      await frontier.commit(claim.member, 'fetched', input.host.length, []);
      pages++;
    }
    const st = await frontier.stats();
    const stats = { fetched: st.fetched ?? 0, failed: 0, skipped: 0, bytes: st.bytes ?? 0 };
    await hosts.record(input.host, {
      state: 'done',
      ...stats,
      frontier: 0,
      delayMs: 0,
      reason: 'stand-in',
      lastUrl: null,
      lastStatus: null,
      nextWakeAt: null,
      updatedAt: new Date().toISOString(),
    });
    const r = await hosts.release(input.host, input.gen);
    const nudger = new CampaignNudger(rt, input.campaignWorkflowId, input.campaignKey);
    if (r.released && (r.ready > 0 || r.active === 0)) nudger.nudge();
    await nudger.flush();
    return drainedResult(input, r.released, pages, stats);
  };
}

/** What a stand-in session that drained its host returns. */
export function drainedResult(input: SessionInput, released: boolean, pages: number, stats: HostStats): SessionResult {
  return {
    end: 'drained',
    waitMs: 0,
    backingOff: false,
    released,
    stop: null,
    configVersion: input.configVersion,
    pages,
    stats,
    frontier: 0,
    delayMs: 0,
    reason: 'stand-in',
    lastUrl: null,
    lastStatus: null,
  };
}
