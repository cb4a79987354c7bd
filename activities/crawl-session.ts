// A host session: one activity that crawls a run of its host's URLs, paced by
// the shared Redis host clock, committing every page in Redis as it goes.
// It ends when the frontier is empty, when the next request is due at or
// beyond the durable-sleep threshold (the host's workflow sleeps that out
// with a durable timer), at its page or time cap, or when the campaign's
// control says so (pause, new settings, stop), which it reads between pages.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import type { CampaignSettings } from '../src/config/campaign';
import { CampaignHosts, type HostRecord, type HostState } from '../src/redis/campaign-hosts';
import { Frontier, SessionSupersededError } from '../src/redis/frontier';
import { RevisitSchedule, type RevisitQueue } from '../src/redis/revisit';
import { hostStatsOf } from '../src/stats/counters';
import { delayFor } from './host-delay';
import { CampaignNudger, wakeSleepingHolders } from './nudge';
import { LONG_SLEEP_MS, PAGE_RETRY } from '../src/config/retry-policy';
import { httpFetcher } from '../src/http/fetcher';
import type { PageFetcher } from '../src/browser/page-fetcher';
import { cookieFetcher } from '../src/http/cookie-jar';
import { loadHandler } from '../src/handlers/loader';
import { HostLogin } from './login';
import type { LoginRun } from './login-run';
import { renderingFetcher } from './render';
import { fetchPage, processPage, recordInternalError, recordWithoutFetch, type FetchedPage, type PageJob, type PageResult, type Woke } from './page';
import { OUTCOME, PAGE_CODE } from './pipeline/outcome';
import { ensureRobots } from './robots';
import type { RobotsVerdict } from './robots-verdict';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { SessionClock } from './session-clock';
import type { SessionEnd, SessionInput, SessionResult } from './types';

/** How often a session reads the campaign's control (pause, stop, settings version): steering reaches it within this. */
const CONTROL_EVERY_MS = 250;
/** How often the host's record (what `crawler status` shows) is brought up to date while the session runs. */
const RECORD_EVERY_MS = 2_000;
/** The SDK throttles heartbeats (SESSION_HEARTBEAT.throttleMs); this only keeps them coming while a page takes long. */
const HEARTBEAT_EVERY_MS = 1_000;
/** A URL whose processing failed this many times for a reason other than the network is recorded as INTERNAL_ERROR. */
const MAX_PAGE_ATTEMPTS = PAGE_RETRY.maxProcessingAttempts;

export function crawlSessionActivity(rt: WorkerRuntime) {
  return async function crawlSession(input: SessionInput): Promise<SessionResult> {
    if (!input.local) {
      rt.localShare.touch(input.campaignKey);
      return runSession(rt, input);
    }
    // A local first session past its campaign's share of this worker: the host goes to the task queue (activities/local-share.ts).
    if (!rt.localShare.tryEnter(input.campaignKey)) return deferredSession(input);
    try {
      return await runSession(rt, input);
    } finally {
      rt.localShare.leave(input.campaignKey);
    }
  };
}

async function runSession(rt: WorkerRuntime, input: SessionInput): Promise<SessionResult> {
  // Counted from before it opens: the session that waits on its host's robots.txt warm-up is
  // what keeps the warm-up's connection open for it (activities/robots.ts).
  rt.sessionOpened(input.campaignKey, input.host);
  try {
    const session = await HostSession.open(rt, input);
    try {
      return await session.run();
    } finally {
      session.close();
    }
  } finally {
    rt.sessionClosed(input.campaignKey, input.host);
  }
}

/** A first session that fetched nothing and hands the host to a regular session at once ('cap'). */
function deferredSession(input: SessionInput): SessionResult {
  return {
    end: 'cap',
    waitMs: 0,
    backingOff: false,
    released: false,
    stop: null,
    configVersion: input.configVersion,
    pages: 0,
    stats: hostStatsOf(),
    frontier: 0,
    delayMs: 0,
    reason: 'first session deferred: campaigns share this worker, and this one holds its share of local sessions',
    lastUrl: null,
    lastStatus: null,
  };
}

/** A verdict under which the session goes on (not `wait`). */
type Robots = Exclude<RobotsVerdict, { kind: 'wait' }>;
/** A URL the frontier handed to this session. */
type Claim = NonNullable<Awaited<ReturnType<Frontier['claim']>>>;
/** The campaign's control as a session reads it between pages. */
type SessionControl = Awaited<ReturnType<CampaignHosts['sessionControl']>>;

/** What the session fetches with, once robots.txt is known, and the clock it fetches under. */
interface Fetching {
  robots: Robots;
  clock: SessionClock;
  fetcher: PageFetcher;
  /** The handler's login for this host (activities/login.ts); null when it has no login hook. */
  login: HostLogin | null;
}

/**
 * One session of one host: its state between pages (the campaign's control,
 * the host's delay, what it did so far) and the steps it goes through. Each
 * step of the loop returns the session's result when the session ends there,
 * null when it goes on.
 */
class HostSession {
  private readonly ctx: Context;
  private readonly signal: AbortSignal;
  private readonly host: string;
  private readonly s: CampaignSettings;
  private readonly threshold: number;
  private readonly nudger: CampaignNudger;
  private readonly started: number;
  /** session.maxMs, or session.firstLocalMs for a host's first session (a local activity) when shorter. */
  private readonly maxMs: number;
  /** Local activities do not heartbeat (their workflow task is their lease): null for them. */
  private readonly heartbeat: ReturnType<typeof setInterval> | null;
  private readonly revisits: RevisitSchedule | null;
  private pages = 0;
  private lastUrl: string | null = null;
  private lastStatus: number | null = null;
  private delay: { ms: number; reason: string };
  /**
   * When the record was last written: the session's start at first, so the first record is
   * written RECORD_EVERY_MS in or at the session's end, whichever is sooner. A one-page session
   * writes one record, not a 'crawling' one its end overwrites a second later (issue 27: about
   * 8 Redis commands a host).
   */
  private lastRecordAt: number;
  private lastControlAt: number;
  private queue: RevisitQueue | null = null;
  /** The host's counters and frontier size when the session's end read them already (drained): its record takes them. */
  private counted: Awaited<ReturnType<Frontier['statsAndSize']>> | null = null;

  /** Reads the campaign's control and settings, and takes the host over; the session runs from `run`. */
  static async open(rt: WorkerRuntime, input: SessionInput): Promise<HostSession> {
    const ctx = Context.current();
    const { host } = input;
    const redis = rt.deps.redis;
    if (input.sleptMs) rt.deps.metrics?.recordPolitenessWait(input.sleptMs);
    const hosts = new CampaignHosts(redis, input.campaignKey);
    const control = await hosts.sessionControl(host);
    const campaign = await rt.campaign(input.campaignKey, Math.max(input.configVersion, control.version));
    if (ctx.cancellationSignal.aborted) throw new Error('session cancelled before it started');
    const frontier = new Frontier(redis, input.campaignKey, host);
    // This attempt owns the host from now on: an older attempt of the same
    // session still running somewhere (its heartbeat timed out under load)
    // fails its next claim and stops, so at most its page in flight is
    // fetched twice. A local session run again after its workflow task timed
    // out (its worker stalled or died) has the same run, ID and attempt as the
    // one before: a nonce tells them apart, so the older one loses its claim.
    const attempt = `${ctx.info.workflowExecution?.runId}/${ctx.info.activityId}/${ctx.info.attempt}`;
    const token = ctx.info.isLocal ? `${attempt}/local-${randomUUID()}` : attempt;
    await frontier.takeOver(token);
    return new HostSession(rt, input, ctx, hosts, control, campaign, frontier, token);
  }

  private constructor(
    private readonly rt: WorkerRuntime,
    private readonly input: SessionInput,
    ctx: Context,
    private readonly hosts: CampaignHosts,
    private control: SessionControl,
    private readonly campaign: CampaignRuntime,
    private readonly frontier: Frontier,
    private readonly token: string,
  ) {
    this.ctx = ctx;
    this.signal = ctx.cancellationSignal;
    this.host = input.host;
    this.s = campaign.settings;
    this.threshold = this.s.session.durableSleepMs;
    this.nudger = new CampaignNudger(rt, input.campaignWorkflowId, input.campaignKey);
    this.started = Date.now();
    this.lastRecordAt = this.started;
    this.maxMs = input.local ? Math.min(this.s.session.maxMs, this.s.session.firstLocalMs) : this.s.session.maxMs;
    this.heartbeat = ctx.info.isLocal ? null : setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
    this.delay = delayFor(this.s, control, null);
    this.lastControlAt = Date.now();
    // Continuous crawling: the host's revisit schedule (src/redis/revisit.ts).
    this.revisits = this.s.revisit?.enabled ? new RevisitSchedule(rt.deps.redis, input.campaignKey, this.host) : null;
  }

  /** Stops the heartbeat, whichever way the session ends (a throw included). */
  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
  }

  /** The session: an early stop, robots.txt, then page after page until a step ends it. */
  async run(): Promise<SessionResult> {
    const early = this.stopFor();
    if (early) return this.endFor(early);
    const robots = await ensureRobots(this.rt, { campaign: this.campaign, host: this.host, maxWaitMs: this.threshold, signal: this.signal });
    if (robots.kind === 'wait') return this.end('wait', { waitMs: robots.waitMs, backingOff: robots.backingOff, reason: robots.why });
    this.delay = delayFor(this.s, this.control, robots.kind === 'ok' ? robots.crawlDelaySec : null);
    // An operator's mode for the host wins over the campaign's (`crawler set-render`: a change ends the session at
    // its settings version, and the next one reads it). A rendered page holds the clock through its render too.
    const mode = this.control.hostRender ?? this.s.render;
    const clock = await SessionClock.open(this.rt, this.campaign, { host: this.host, token: this.token, delay: this.delay, rendered: mode !== 'off', signal: this.signal });
    const http = httpFetcher(this.campaign.http);
    const fetcher = this.campaign.cookies ? cookieFetcher(http, this.campaign.cookies) : http;
    const allows = robots.kind === 'ok' ? robots.allows : null;
    const handler = this.s.handler && robots.kind === 'ok' && !robots.refused ? await loadHandler(this.s.handler) : null;
    const login = handler ? await HostLogin.open({ rt: this.rt, campaign: this.campaign, host: this.host, handler, allows }) : null;
    const rendering =
      mode !== 'off' ? renderingFetcher(this.rt, this.campaign, { host: this.host, frontier: this.frontier, inner: fetcher, allowedByRobots: allows, mode, handler }) : null;
    const f: Fetching = { robots, clock, fetcher: rendering ?? fetcher, login };
    try {
      for (;;) {
        const done = await this.turn(f);
        if (done) return done;
      }
    } finally {
      // The session's browser context goes with it: the next session of the host starts a fresh one.
      await rendering?.close();
    }
  }

  /** One turn of the loop: the campaign's control, the host's record, the caps, then one URL. */
  private async turn(f: Fetching): Promise<SessionResult | null> {
    const unfetched = f.robots.kind === 'unavailable' || !!f.robots.refused;
    // After a commit that left the frontier empty the claim comes first (claimThenClock), and the control is read only if it finds a URL.
    if (unfetched || !this.frontier.emptyAfterCommit) {
      const why = await this.controlStop();
      if (why) return this.endFor(why);
    }
    if (Date.now() - this.lastRecordAt >= RECORD_EVERY_MS) await this.writeRecord('crawling');
    if (this.pages >= this.s.session.maxPages || Date.now() - this.started >= this.maxMs || this.rt.draining) return this.end('cap');
    // Cancelled (its worker is going away, or Temporal gave up on it): stop at once, commit nothing more.
    this.signal.throwIfAborted();
    if (this.heartbeat) this.ctx.heartbeat();
    // A host that may not be fetched at all: its URLs are recorded, none requested.
    if (unfetched) return this.recordUnfetched(f);
    return this.fetchNext(f);
  }

  /** The campaign's control, read again when CONTROL_EVERY_MS have passed: why the session must end, if it must. */
  private async controlStop(): Promise<SessionEnd | null> {
    if (Date.now() - this.lastControlAt < CONTROL_EVERY_MS) return null;
    this.control = await this.hosts.sessionControl(this.host);
    this.lastControlAt = Date.now();
    return this.stopFor();
  }

  /** The next URL of a host that may not be fetched (robots.txt unavailable, its address refused), recorded without a request. */
  private async recordUnfetched(f: Fetching): Promise<SessionResult | null> {
    const { robots } = f;
    const claim = await this.frontier.claim(this.token);
    if (!claim) return this.drained();
    const job = this.jobFor(f, claim, null);
    if (robots.kind === 'unavailable') {
      await recordWithoutFetch(this.rt, job, OUTCOME.robotsUnavailable, 'skipped', {
        code: robots.code,
        message: `robots.txt kept failing (${robots.detail}): RFC 9309 says crawl nothing`,
      });
    } else {
      await recordWithoutFetch(this.rt, job, OUTCOME.refused, 'failed', {
        code: PAGE_CODE.addressRefused,
        message: `${this.host} resolves to an address this campaign refuses (private, loopback, link-local or metadata): ${robots.refused}`,
      });
    }
    this.pages++;
    return null;
  }

  /** The host clock, then the next URL: fetched, or (none queued) the revisits' turn. */
  private async fetchNext(f: Fetching): Promise<SessionResult | null> {
    if (this.frontier.emptyAfterCommit) return this.claimThenClock(f);
    const wait = await f.clock.take(this.threshold);
    if (wait > 0) return this.end('wait', { waitMs: wait, reason: f.clock.waitReason(wait) });
    let claim;
    try {
      claim = await this.frontier.claim(this.token);
    } catch (err) {
      // A newer attempt took the host over: this one sends nothing, and
      // gives back the lease it just took (only if it still holds it).
      if (err instanceof SessionSupersededError) await f.clock.abandon().catch(() => undefined);
      throw err;
    }
    if (!claim) {
      // No request went out: the host's delay still counts from its real last request.
      await f.clock.abandon();
      return this.nothingQueued();
    }
    return this.crawlPage(f, claim);
  }

  /**
   * The last page's commit left the frontier empty (a one-page host): the claim goes first, so a
   * host with nothing more to fetch ends without waiting out its delay for the clock and without
   * taking and giving it back, nor reading the campaign's control (nothing is left to pause or
   * stop; issue 27: a second a host, 15 Redis commands). An empty claim clears
   * the awake flag as in fetchNext. A URL enqueued since the commit is claimed, then the clock
   * taken for it; a wait for the clock past the threshold ends the session with the URL still the
   * host's current one, that claim noted as a retry: it uses up none of the URL's processing attempts.
   */
  private async claimThenClock(f: Fetching): Promise<SessionResult | null> {
    const claim = await this.frontier.claim(this.token);
    if (!claim) return this.nothingQueued();
    // Paused or stopped since: the URL stays the host's current one, its claim noted as a retry.
    const why = await this.controlStop();
    if (why) {
      await this.frontier.noteRetry(claim.member);
      return this.endFor(why);
    }
    let wait;
    try {
      wait = await f.clock.take(this.threshold);
    } catch (err) {
      // Cancelled while it waited: nothing was requested.
      await this.frontier.noteRetry(claim.member).catch(() => undefined);
      throw err;
    }
    if (wait > 0) {
      await this.frontier.noteRetry(claim.member);
      return this.end('wait', { waitMs: wait, reason: f.clock.waitReason(wait) });
    }
    return this.crawlPage(f, claim);
  }

  /** The frontier is empty: the session ends, or (revisits) takes what is due, or sleeps until it is. */
  private async nothingQueued(): Promise<SessionResult | null> {
    if (!this.revisits) return this.drained();
    // Nothing queued: what is due for a revisit comes into the frontier;
    // with nothing due the host keeps its slot and sleeps until the
    // earliest revisit (durably from the threshold on).
    const due = await this.revisits.moveDue();
    this.queue = due;
    if (due.moved > 0) return null;
    if (due.nextInMs === null) return this.drained();
    const reason = `revisits: ${due.scheduled} URL(s) scheduled, the next due in ${Math.ceil(due.nextInMs / 1000)} s`;
    if (due.nextInMs >= this.threshold) return this.untilRevisit(due.nextInMs, reason);
    await sleep(due.nextInMs, undefined, { signal: this.signal });
    return null;
  }

  /** The next revisit is due at or beyond the durable-sleep threshold: park the host, or end so that its workflow sleeps. */
  private async untilRevisit(nextInMs: number, reason: string): Promise<SessionResult> {
    // Hosts wait for a slot (maxActiveHosts, as the last dispatch
    // round saw it): give this one up until its next revisit is due
    // rather than hold it asleep. A host that holds no slot parks too.
    const cap = this.control.maxActiveHosts !== undefined ? this.control.maxActiveHosts : this.s.politeness.maxActiveHosts;
    const p = await this.hosts.park(this.host, this.input.gen, nextInMs, cap !== null);
    if (p.parked) {
      // URLs enqueued since the empty claim found the host holding its slot: in line for one now.
      if ((await this.frontier.size()) > 0) await this.hosts.markReady([this.host]);
      if (p.parked === 'released') this.nudger.nudge();
      return this.end('drained', { released: true, waitMs: nextInMs, reason: `parked until a revisit is due, its slot free for a host waiting for one: ${reason}` });
    }
    // New URLs for this host end that sleep early (wakeSleepingHolders).
    return this.end('wait', { waitMs: nextInMs, reason, wakeable: true });
  }

  /** One claimed URL through the page pipeline (`runPage`), then what its result asks of the session. */
  private async crawlPage(f: Fetching, claim: Claim): Promise<SessionResult | null> {
    const job = this.jobFor(f, claim, f.robots.kind === 'ok' ? f.robots.allows : null);
    const res = await this.runPage(f, job);
    if (res.kind === 'budget') {
      await this.hosts.requestStop('budget');
      this.nudger.nudge();
      return this.stopped();
    }
    if (res.kind === 'done' && res.woke.hosts.length > 0) await this.wake(res.woke);
    this.lastUrl = res.url;
    this.lastStatus = res.status;
    if (res.kind === 'retry') {
      await this.frontier.noteRetry(claim.member);
      if (res.waitMs >= this.threshold) return this.end('wait', { waitMs: res.waitMs, backingOff: true, reason: res.reason });
      this.rt.deps.metrics?.recordPolitenessWait(res.waitMs);
      await sleep(res.waitMs, undefined, { signal: this.signal });
      return null;
    }
    this.pages++;
    return null;
  }

  /**
   * One claimed URL through the page pipeline, the host clock held on entry:
   * fetched under it (login turns included), the clock given back, then processed.
   */
  private async runPage(f: Fetching, job: PageJob): Promise<PageResult> {
    // Processing attempts: claims that ended in a retry (a 503, a reset connection) are not processing failures.
    const processing = job.attempts - job.retried;
    if (processing > MAX_PAGE_ATTEMPTS) {
      // Claimed again and again without a commit and without an error to
      // catch: its processing killed the worker (out of memory, a crash) or
      // blocked it past the heartbeat timeout. Not requested again, or it
      // would take its host (and worker after worker) down forever.
      await f.clock.abandon();
      const message = `claimed ${job.attempts} times without finishing: ${processing - 1} processing attempts ended without a commit (the worker died or was blocked past its heartbeat timeout); not requested again`;
      return recordInternalError(this.rt, job, message);
    }
    try {
      return await processPage(this.rt, await this.fetchUnderClock(f, job));
    } catch (err) {
      if (job.signal.aborted || processing < MAX_PAGE_ATTEMPTS) throw err;
      return recordInternalError(this.rt, job, `processing failed ${processing} times: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * The page's request under the clock this session holds, and the login turns it asks for: the
   * clock goes back (with the delay after a logged-out answer; a first login's first request takes
   * the lease unused), the login runs a clock turn per request, and the page is requested once
   * more. Then the clock goes back as soon as the response is in (parsing and storing are not the
   * host's business); a URL recorded without a request (robots.txt, a budget) gives the lease back
   * unused, so a host with thousands of disallowed links does not wait its delay for each.
   */
  private async fetchUnderClock(f: Fetching, job: PageJob): Promise<FetchedPage> {
    const login = f.login?.gateFor({ url: job.entry.url, depth: job.entry.depth, label: job.entry.label ?? null }) ?? null;
    let page;
    try {
      for (page = await fetchPage(this.rt, job, login); page.kind === 'login-needed'; page = await fetchPage(this.rt, job, login)) {
        if (page.hostPauseMs !== null) await f.clock.release(page.hostPauseMs);
        await this.logIn(f, login!.start(page.reason, { delayMs: this.delay.ms, signal: this.signal }));
        if (!f.clock.held) await f.clock.take(Number.POSITIVE_INFINITY);
      }
    } catch (err) {
      // A request may have gone out: the host gets its delay either way.
      await f.clock.release(this.delay.ms);
      throw err;
    }
    if (page.hostPauseMs === null) await f.clock.abandon();
    else await f.clock.release(page.hostPauseMs);
    return page;
  }

  /**
   * A login, a turn of the session: the hook's requests one at a time, each in a clock turn of its
   * own (a first login's first request has the clock already). What went wrong is the hook's to see
   * as its fetch's failure (a cancellation then ends the run).
   */
  private async logIn(f: Fetching, run: LoginRun): Promise<void> {
    for (let step = await run.next(); step.kind === 'request'; step = await run.next()) {
      const { request, signal } = step;
      await step.settle(f.clock.turn(() => f.fetcher.fetch(request, { signal })));
    }
  }

  private jobFor(f: Fetching, claim: Claim, allowedByRobots: PageJob['allowedByRobots']): PageJob {
    const { campaign, frontier, host, signal } = this;
    return { campaign, frontier, fetcher: f.fetcher, host, ...claim, delayMs: this.delay.ms, allowedByRobots, signal };
  }

  /** The page marked `woke.hosts` ready before its commit (`readied` of them became so). */
  private async wake(woke: Woke): Promise<void> {
    let marked = woke.readied;
    // A revisit host holding its slot may be asleep until its next due URL: wake it.
    if (this.revisits) marked += await wakeSleepingHolders(this.rt, this.input.campaignKey, this.s.campaignId, woke.hosts);
    if (marked > 0) this.nudger.nudge();
  }

  private stopFor(): SessionEnd | null {
    const { control } = this;
    return control.stop ? 'stopped' : control.paused || control.hostPaused ? 'paused' : control.version > this.campaign.version ? 'config' : null;
  }

  private endFor(why: SessionEnd): Promise<SessionResult> {
    return why === 'stopped' ? this.stopped() : this.end(why);
  }

  private async writeRecord(state: HostState, extra: Partial<HostRecord> = {}) {
    const { stats: st, size } = this.counted ?? (await this.frontier.statsAndSize());
    this.counted = null;
    const stats = hostStatsOf(st);
    this.lastRecordAt = Date.now();
    await this.hosts.record(this.host, {
      state,
      ...stats,
      frontier: size,
      delayMs: this.delay.ms,
      reason: this.delay.reason,
      lastUrl: this.lastUrl,
      lastStatus: this.lastStatus,
      nextWakeAt: null,
      updatedAt: new Date().toISOString(),
      ...(this.queue ? { revisit: revisitView(this.queue) } : {}),
      ...extra,
    });
    return { stats, frontier: size };
  }

  private async end(how: SessionEnd, more: Partial<SessionResult> = {}): Promise<SessionResult> {
    this.close();
    // Drained, asleep, paused or stopped: the host's next request, if any, is a durable sleep or a
    // new session away, likely on another worker; its idle connection is let go rather than kept
    // alive (issue 27: in a crawl of one-page hosts, a socket and 40 KB of heap per finished host).
    // A session ended at its cap or for new settings goes on at once: its connection is kept.
    if (how !== 'cap' && how !== 'config') this.campaign.http.releaseHost?.(this.host);
    const waitMs = more.waitMs ?? 0;
    const reason = more.reason ?? this.delay.reason;
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
    if (this.revisits) this.queue = await this.revisits.queue();
    const r = await this.writeRecord(state, { reason, nextWakeAt: waitMs > 0 ? new Date(Date.now() + waitMs).toISOString() : null });
    await this.nudger.flush();
    const { control, queue } = this;
    return {
      end: how,
      waitMs,
      backingOff: more.backingOff ?? false,
      ...(more.wakeable ? { wakeable: true } : {}),
      released: more.released ?? false,
      stop: more.stop ?? control.stop,
      configVersion: Math.max(this.campaign.version, control.version),
      pages: this.pages,
      stats: r.stats,
      frontier: r.frontier,
      delayMs: this.delay.ms,
      reason,
      lastUrl: this.lastUrl,
      lastStatus: this.lastStatus,
      ...(queue ? { revisit: revisitView(queue) } : {}),
    };
  }

  /** The campaign is ending: give the slot up (its host workflow completes), and tell the campaign when it was the last. */
  private async stopped(): Promise<SessionResult> {
    const r = await this.hosts.release(this.host, this.input.gen);
    if (r.active === 0) this.nudger.nudge();
    return this.end('stopped', { released: r.released, stop: (await this.hosts.control()).stop });
  }

  /** The frontier ran dry: give the host's slot up, unless a newer dispatch holds it. */
  private async drained(): Promise<SessionResult> {
    const r = await this.hosts.release(this.host, this.input.gen);
    // URLs enqueued between the empty claim and the release found the host
    // holding its slot and did not mark it ready: mark it now.
    // The counts the end's record carries are read here once, after the release, for both.
    const counted = r.released ? await this.frontier.statsAndSize() : null;
    this.counted = counted;
    const late = counted !== null && counted.size > 0 && (await this.hosts.markReady([this.host])) > 0;
    // The campaign dispatches the next ready host into the slot, or checks whether it is done.
    if (r.released && (late || r.ready > 0 || r.active === 0)) this.nudger.nudge();
    return this.end('drained', { released: r.released });
  }
}

/** What operators see of a host's revisit queue (host record, domainStatus query). */
function revisitView(q: RevisitQueue): NonNullable<HostRecord['revisit']> {
  return { scheduled: q.scheduled, nextDueAt: q.nextInMs === null ? null : new Date(Date.now() + q.nextInMs).toISOString(), dueHour: q.dueHour, dueDay: q.dueDay };
}
