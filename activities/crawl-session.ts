// A host session: one activity that crawls a run of its host's URLs, paced by
// the shared Redis host clock, committing every page in Redis as it goes.
// It ends when the frontier is empty, when the next request is due at or
// beyond the durable-sleep threshold (the host's workflow sleeps that out
// with a durable timer), at its page or time cap, or when the campaign's
// control says so (pause, new settings, stop), which it reads between pages.
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { crawlDelayMs, type CampaignSettings } from '../src/config/campaign';
import { operatorDelayReason } from '../src/config/steering';
import { CampaignHosts, type HostRecord, type HostState } from '../src/redis/campaign-hosts';
import { Frontier, SessionSupersededError } from '../src/redis/frontier';
import { acquireWithin, HostClock } from '../src/redis/host-clock';
import { RevisitSchedule, type RevisitQueue } from '../src/redis/revisit';
import { CampaignNudger, wakeSleepingHolders } from './nudge';
import { LONG_SLEEP_MS, PAGE_RETRY } from '../src/config/retry-policy';
import { httpFetcher } from '../src/http/fetcher';
import { fetchPage, processPage, recordInternalError, recordWithoutFetch, type PageJob, type PageResult } from './page';
import { OUTCOME, PAGE_CODE } from './pipeline/outcome';
import { ensureRobots } from './robots';
import type { WorkerRuntime } from './runtime';
import type { SessionEnd, SessionInput, SessionResult } from './types';

/** How often a session reads the campaign's control (pause, stop, settings version): steering reaches it within this. */
const CONTROL_EVERY_MS = 250;
/** How often the host's record (what `crawler status` shows) is brought up to date while the session runs. */
const RECORD_EVERY_MS = 2_000;
/** The SDK throttles heartbeats to 80 % of the heartbeat timeout; this only keeps them coming while a page takes long. */
const HEARTBEAT_EVERY_MS = 1_000;
/** A URL whose processing failed this many times for a reason other than the network is recorded as INTERNAL_ERROR. */
const MAX_PAGE_ATTEMPTS = PAGE_RETRY.maxProcessingAttempts;

export function crawlSessionActivity(rt: WorkerRuntime) {
  return async function crawlSession(input: SessionInput): Promise<SessionResult> {
    const ctx = Context.current();
    const signal = ctx.cancellationSignal;
    const { host } = input;
    const redis = rt.deps.redis;
    if (input.sleptMs) rt.deps.metrics?.recordPolitenessWait(input.sleptMs);
    const hosts = new CampaignHosts(redis, input.campaignKey);
    let control = await hosts.sessionControl(host);
    const campaign = await rt.campaign(input.campaignKey, Math.max(input.configVersion, control.version));
    if (signal.aborted) throw new Error('session cancelled before it started');
    const s = campaign.settings;
    const frontier = new Frontier(redis, input.campaignKey, host);
    // This attempt owns the host from now on: an older attempt of the same
    // session still running somewhere (its heartbeat timed out under load)
    // fails its next claim and stops, so at most its page in flight is
    // fetched twice.
    const token = `${ctx.info.workflowExecution?.runId}/${ctx.info.activityId}/${ctx.info.attempt}`;
    await frontier.takeOver(token);
    const threshold = s.session.durableSleepMs;
    const nudger = new CampaignNudger(rt, input.campaignWorkflowId, input.campaignKey);
    const started = Date.now();
    const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
    let pages = 0;
    let lastUrl: string | null = null;
    let lastStatus: number | null = null;
    let delay = delayFor(s, control, null);
    let lastRecordAt = 0;
    let lastControlAt = Date.now();
    // Continuous crawling: the host's revisit schedule (src/redis/revisit.ts).
    const revisits = s.revisit?.enabled ? new RevisitSchedule(redis, input.campaignKey, host) : null;
    let queue: RevisitQueue | null = null;

    const writeRecord = async (state: HostState, extra: Partial<HostRecord> = {}) => {
      const [st, size] = await Promise.all([frontier.stats(), frontier.size()]);
      lastRecordAt = Date.now();
      await hosts.record(host, {
        state,
        fetched: st.fetched ?? 0,
        failed: st.failed ?? 0,
        skipped: st.skipped ?? 0,
        bytes: st.bytes ?? 0,
        frontier: size,
        delayMs: delay.ms,
        reason: delay.reason,
        lastUrl,
        lastStatus,
        nextWakeAt: null,
        updatedAt: new Date().toISOString(),
        ...(queue ? { revisit: revisitView(queue) } : {}),
        ...extra,
      });
      return { stats: { fetched: st.fetched ?? 0, failed: st.failed ?? 0, skipped: st.skipped ?? 0, bytes: st.bytes ?? 0 }, frontier: size };
    };

    const end = async (how: SessionEnd, more: Partial<SessionResult> = {}): Promise<SessionResult> => {
      clearInterval(heartbeat);
      const waitMs = more.waitMs ?? 0;
      const reason = more.reason ?? delay.reason;
      const state: HostState =
        how === 'wait'
          ? more.backingOff
            ? 'backing-off'
            : waitMs >= LONG_SLEEP_MS
              ? 'sleeping'
              : 'crawling'
          : how === 'paused'
            ? 'paused'
            : how === 'drained' && more.released && waitMs > 0
              ? 'sleeping' // parked: its workflow ends, a dispatch starts it again when a revisit is due
              : how === 'stopped' || (how === 'drained' && more.released)
                ? 'done'
                : 'crawling';
      if (revisits) queue = await revisits.queue();
      const r = await writeRecord(state, { reason, nextWakeAt: waitMs > 0 ? new Date(Date.now() + waitMs).toISOString() : null });
      await nudger.flush();
      return {
        end: how,
        waitMs,
        backingOff: more.backingOff ?? false,
        ...(more.wakeable ? { wakeable: true } : {}),
        released: more.released ?? false,
        stop: more.stop ?? control.stop,
        configVersion: Math.max(campaign.version, control.version),
        pages,
        stats: r.stats,
        frontier: r.frontier,
        delayMs: delay.ms,
        reason,
        lastUrl,
        lastStatus,
        ...(queue ? { revisit: revisitView(queue) } : {}),
      };
    };

    try {
      const stopFor = (): SessionEnd | null => (control.stop ? 'stopped' : control.paused || control.hostPaused ? 'paused' : control.version > campaign.version ? 'config' : null);
      const endFor = (why: SessionEnd) => (why === 'stopped' ? stopped() : end(why));
      const early = stopFor();
      if (early) return await endFor(early);

      const robots = await ensureRobots(rt, { campaign, host, maxWaitMs: threshold, signal });
      if (robots.kind === 'wait') return await end('wait', { waitMs: robots.waitMs, backingOff: robots.backingOff, reason: robots.why });
      delay = delayFor(s, control, robots.kind === 'ok' ? robots.crawlDelaySec : null);
      const clock = new HostClock(redis, await campaign.clockKeys.keyFor(host), token);
      // One owner per campaign and host: a session retried after its worker
      // died may take the clock once the delay has passed since the dead
      // attempt took it (crawlClockAcquire), never sooner.
      const owner = `${campaign.key}|${host}`;
      const lease = s.fetch.totalTimeoutMs + delay.ms + 5_000;
      const fetcher = httpFetcher(campaign.http);
      // The page marked `hs` ready before its commit (`readied` of them became so).
      const wake = async (hs: string[], readied: number) => {
        let marked = readied;
        // A revisit host holding its slot may be asleep until its next due URL: wake it.
        if (revisits) marked += await wakeSleepingHolders(rt, input.campaignKey, s.campaignId, hs);
        if (marked > 0) nudger.nudge();
      };

      for (;;) {
        if (Date.now() - lastControlAt >= CONTROL_EVERY_MS) {
          control = await hosts.sessionControl(host);
          lastControlAt = Date.now();
          const why = stopFor();
          if (why) return await endFor(why);
        }
        if (Date.now() - lastRecordAt >= RECORD_EVERY_MS) await writeRecord('crawling');
        if (pages >= s.session.maxPages || Date.now() - started >= s.session.maxMs || rt.draining) return await end('cap');
        // Cancelled (its worker is going away, or Temporal gave up on it): stop at once, commit nothing more.
        signal.throwIfAborted();
        ctx.heartbeat();

        // A host that may not be fetched at all: its URLs are recorded, none requested.
        if (robots.kind === 'unavailable' || robots.refused) {
          const claim = await frontier.claim(token);
          if (!claim) return await drained();
          const job: PageJob = { campaign, frontier, fetcher, host, ...claim, delayMs: delay.ms, allowedByRobots: null, wokenHosts: [], readied: 0, signal };
          if (robots.kind === 'unavailable') {
            await recordWithoutFetch(rt, job, OUTCOME.robotsUnavailable, 'skipped', {
              code: robots.code,
              message: `robots.txt kept failing (${robots.detail}): RFC 9309 says crawl nothing`,
            });
          } else {
            await recordWithoutFetch(rt, job, OUTCOME.refused, 'failed', {
              code: PAGE_CODE.addressRefused,
              message: `${host} resolves to an address this campaign refuses (private, loopback, link-local or metadata): ${robots.refused}`,
            });
          }
          pages++;
          continue;
        }

        const wait = await acquireWithin(clock, owner, lease, delay.ms, threshold, signal, (ms) => rt.deps.metrics?.recordPolitenessWait(ms));
        // Up to one delay away is our own pace; longer is someone else's request (another campaign, a Retry-After).
        if (wait > 0) return await end('wait', { waitMs: wait, reason: wait <= delay.ms ? delay.reason : 'host clock: another request to this host is too recent' });
        let claim;
        try {
          claim = await frontier.claim(token);
        } catch (err) {
          // A newer attempt took the host over: this one sends nothing, and
          // gives back the lease it just took (only if it still holds it).
          if (err instanceof SessionSupersededError) await clock.abandon(owner).catch(() => undefined);
          throw err;
        }
        if (!claim) {
          // No request went out: the host's delay still counts from its real last request.
          await clock.abandon(owner);
          if (!revisits) return await drained();
          // Nothing queued: what is due for a revisit comes into the frontier;
          // with nothing due the host keeps its slot and sleeps until the
          // earliest revisit (durably from the threshold on).
          const due = await revisits.moveDue();
          queue = due;
          if (due.moved > 0) continue;
          if (due.nextInMs === null) return await drained();
          const reason = `revisits: ${due.scheduled} URL(s) scheduled, the next due in ${Math.ceil(due.nextInMs / 1000)} s`;
          if (due.nextInMs >= threshold) {
            // Hosts wait for a slot (maxActiveHosts, as the last dispatch
            // round saw it): give this one up until its next revisit is due
            // rather than hold it asleep. A host that holds no slot parks too.
            const cap = control.maxActiveHosts !== undefined ? control.maxActiveHosts : s.politeness.maxActiveHosts;
            const p = await hosts.park(host, input.gen, due.nextInMs, cap !== null);
            if (p.parked) {
              // URLs enqueued since the empty claim found the host holding its slot: in line for one now.
              if ((await frontier.size()) > 0) await hosts.markReady([host]);
              if (p.parked === 'released') nudger.nudge();
              return await end('drained', { released: true, waitMs: due.nextInMs, reason: `parked until a revisit is due, its slot free for a host waiting for one: ${reason}` });
            }
            // New URLs for this host end that sleep early (wakeSleepingHolders).
            return await end('wait', { waitMs: due.nextInMs, reason, wakeable: true });
          }
          await sleep(due.nextInMs, undefined, { signal });
          continue;
        }
        const job: PageJob = { campaign, frontier, fetcher, host, ...claim, delayMs: delay.ms, allowedByRobots: robots.allows, wokenHosts: [], readied: 0, signal };
        const res = await runPage(rt, job, { clock, owner, delayMs: delay.ms });
        if (res.kind === 'budget') {
          await hosts.requestStop('budget');
          nudger.nudge();
          return await stopped();
        }
        if (job.wokenHosts.length > 0) await wake(job.wokenHosts, job.readied);
        lastUrl = res.url;
        lastStatus = res.status;
        if (res.kind === 'retry') {
          await frontier.noteRetry(claim.member);
          if (res.waitMs >= threshold) return await end('wait', { waitMs: res.waitMs, backingOff: true, reason: res.reason });
          rt.deps.metrics?.recordPolitenessWait(res.waitMs);
          await sleep(res.waitMs, undefined, { signal });
          continue;
        }
        pages++;
      }
    } finally {
      clearInterval(heartbeat);
    }

    /** The campaign is ending: give the slot up (its host workflow completes), and tell the campaign when it was the last. */
    async function stopped(): Promise<SessionResult> {
      const r = await hosts.release(host, input.gen);
      if (r.active === 0) nudger.nudge();
      return end('stopped', { released: r.released, stop: (await hosts.control()).stop });
    }

    /** The frontier ran dry: give the host's slot up, unless a newer dispatch holds it. */
    async function drained(): Promise<SessionResult> {
      const r = await hosts.release(host, input.gen);
      // URLs enqueued between the empty claim and the release found the host
      // holding its slot and did not mark it ready: mark it now.
      const late = r.released && (await frontier.size()) > 0 && (await hosts.markReady([host])) > 0;
      // The campaign dispatches the next ready host into the slot, or checks whether it is done.
      if (r.released && (late || r.ready > 0 || r.active === 0)) nudger.nudge();
      return end('drained', { released: r.released });
    }
  };
}

/**
 * One claimed URL through the page pipeline, the host clock held by this
 * session alone: the fetch stage runs under it, and the session gives it
 * back from what the stage returned before the rest of the pipeline runs.
 */
async function runPage(rt: WorkerRuntime, job: PageJob, c: { clock: HostClock; owner: string; delayMs: number }): Promise<PageResult> {
  const { clock, owner } = c;
  // Processing attempts: claims that ended in a retry (a 503, a reset connection) are not processing failures.
  const processing = job.attempts - job.retried;
  if (processing > MAX_PAGE_ATTEMPTS) {
    // Claimed again and again without a commit and without an error to
    // catch: its processing killed the worker (out of memory, a crash) or
    // blocked it past the heartbeat timeout. Not requested again, or it
    // would take its host (and worker after worker) down forever.
    await clock.abandon(owner);
    const message = `claimed ${job.attempts} times without finishing: ${processing - 1} processing attempts ended without a commit (the worker died or was blocked past its heartbeat timeout); not requested again`;
    return recordInternalError(rt, job, message);
  }
  try {
    const page = await fetchPage(rt, job).catch(async (err: unknown) => {
      // A request may have gone out: the host gets its delay either way.
      await clock.release(owner, c.delayMs);
      throw err;
    });
    // The clock goes back as soon as the response is in (parsing and
    // storing are not the host's business). A URL recorded without a
    // request (robots.txt disallows it, a budget is spent) gives the lease
    // back unused, so a host with thousands of disallowed links does not
    // wait its delay once for each of them.
    if (page.hostPauseMs === null) await clock.abandon(owner);
    else await clock.release(owner, page.hostPauseMs);
    return await processPage(rt, page);
  } catch (err) {
    if (job.signal.aborted || processing < MAX_PAGE_ATTEMPTS) throw err;
    return recordInternalError(rt, job, `processing failed ${processing} times: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** What operators see of a host's revisit queue (host record, domainStatus query). */
function revisitView(q: RevisitQueue): NonNullable<HostRecord['revisit']> {
  return { scheduled: q.scheduled, nextDueAt: q.nextInMs === null ? null : new Date(Date.now() + q.nextInMs).toISOString(), dueHour: q.dueHour, dueDay: q.dueDay };
}

/** The pause between two requests to the host now, and why: the operator's delay (host, then campaign), the settings', robots.txt's if longer. */
export function delayFor(
  s: CampaignSettings,
  control: { minDelayMs: number | null; hostDelayMs: number | null },
  robotsCrawlDelaySec: number | null,
): { ms: number; reason: string } {
  const operator = control.hostDelayMs ?? control.minDelayMs;
  const base = operator ?? s.politeness.minDelayMs;
  const ms = crawlDelayMs({ ...s.politeness, minDelayMs: base }, robotsCrawlDelaySec);
  // robots.txt wins when it asks for more than the minimum (operators only make it stricter).
  if (robotsCrawlDelaySec && ms > base) return { ms, reason: `robots.txt Crawl-delay ${robotsCrawlDelaySec} s` };
  if (operator !== null) return { ms, reason: operatorDelayReason(operator, control.hostDelayMs !== null) };
  return { ms, reason: `minimum delay ${base} ms` };
}
