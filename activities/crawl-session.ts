// A host session: one activity that crawls a run of its host's URLs, paced by
// the shared Redis host clock, committing every page in Redis as it goes.
// It ends when the frontier is empty, when the next request is due at or
// beyond the durable-sleep threshold (the host's workflow sleeps that out
// with a durable timer), at its page or time cap, or when the campaign's
// control says so (pause, new settings, stop), which it reads between pages.
// The session owns the host clock and the frontier's claims, and only them:
// the page (activities/page.ts) and the login (activities/login.ts) say what
// the clock needs, and the session takes it and gives it back.
import { setTimeout as sleep } from 'node:timers/promises';
import type { CampaignSettings } from '../src/config/campaign';
import { SessionSupersededError, type Frontier } from '../src/redis/frontier';
import { RevisitSchedule } from '../src/redis/revisit';
import { delayFor } from './host-delay';
import { HostRecordWriter, type SessionView } from './host-record';
import { giveUpDrained, giveUpStopped, type SlotDeps } from './host-slot';
import type { LoginRun } from './login-run';
import { afterWake, CampaignNudger } from './nudge';
import { underAttemptPolicy } from './page-attempts';
import { fetchPage, processPage, recordInternalError, recordUnfetched, WokenHosts, type FetchedPage, type PageJob, type SendGuard } from './page';
import { parkUntilRevisit, revisitTurn, slotCap } from './revisit-parking';
import { ensureRobots } from './robots';
import type { CampaignRuntime, WorkerRuntime } from './runtime';
import { SessionClock } from './session-clock';
import { ControlReads } from './session-control';
import { openSession, sessionDeadline, type Heartbeat, type OpenedSession } from './session-open';
import { openSessionFetcher, renderModeFor, robotsRules, type Robots, type SessionFetcher } from './session-fetcher';
import type { SessionEnd, SessionInput, SessionResult } from './types';

/** A URL the frontier handed to this session. */
type Claim = NonNullable<Awaited<ReturnType<Frontier['claim']>>>;

/** What the session fetches with, once robots.txt is known, and the clock it fetches under. */
interface Fetching extends SessionFetcher {
  robots: Robots;
  clock: SessionClock;
}

/**
 * One session of one host: its state between pages (the campaign's control, the host's delay, what it did so far) and
 * the steps it goes through. Each step of the loop returns the session's result when the session ends there, null when it goes on.
 */
export class HostSession {
  private readonly campaign: CampaignRuntime;
  private readonly frontier: Frontier;
  /** This attempt's claim token (activities/session-open.ts). */
  private readonly token: string;
  private readonly signal: AbortSignal;
  private readonly host: string;
  private readonly s: CampaignSettings;
  private readonly threshold: number;
  private readonly nudger: CampaignNudger;
  private readonly started = Date.now();
  /**
   * When the session ends at its time cap. A host's first session runs inside its workflow's task,
   * whose timeout counts from before the session began: its time counts from when its attempt was
   * scheduled, and bounds each of its waits too (waitBound), so it never outlives the task.
   */
  private readonly deadline: number;
  private readonly heartbeat: Heartbeat;
  private readonly revisits: RevisitSchedule | null;
  private readonly record: HostRecordWriter;
  private readonly control: ControlReads;
  private readonly slot: SlotDeps;
  /** The host's delay and what the session did so far, as its record and result show them. */
  private readonly view: SessionView;
  /** The host clock the session paces its requests by (its politeness key), which knows this attempt's fencing number. */
  private readonly clockKey: string;

  /** Reads the campaign's control and settings, and takes the host over (activities/session-open.ts); the session runs from `run`. */
  static async open(rt: WorkerRuntime, input: SessionInput): Promise<HostSession> {
    return new HostSession(rt, input, await openSession(rt, input));
  }

  private constructor(
    private readonly rt: WorkerRuntime,
    private readonly input: SessionInput,
    o: OpenedSession,
  ) {
    ({ campaign: this.campaign, frontier: this.frontier, token: this.token, heartbeat: this.heartbeat, clockKey: this.clockKey } = o);
    this.signal = o.ctx.cancellationSignal;
    this.host = input.host;
    this.s = o.campaign.settings;
    this.threshold = this.s.session.durableSleepMs;
    this.deadline = sessionDeadline(this.s, input.local, o.ctx.info.currentAttemptScheduledTimestampMs, this.started);
    this.nudger = new CampaignNudger(rt, input.campaignWorkflowId, input.campaignKey);
    this.record = new HostRecordWriter(o.hosts, o.frontier, this.host, this.started);
    this.control = new ControlReads(o.hosts, this.host, o.control, o.campaign.version);
    this.slot = { hosts: o.hosts, frontier: o.frontier, host: this.host, gen: input.gen, nudge: () => this.nudger.nudge() };
    this.view = { delay: delayFor(this.s, o.control, null), pages: 0, lastUrl: null, lastStatus: null, queue: null };
    // Continuous crawling: the host's revisit schedule (src/redis/revisit.ts).
    this.revisits = this.s.revisit?.enabled ? new RevisitSchedule(rt.deps.redis, input.campaignKey, this.host) : null;
  }

  /** The frontier member of the URL being processed now: noted as a retry if Redis fails under it (noteOutage). */
  private inFlight: string | null = null;

  /**
   * Redis failed under the session and answers again (activities/redis-outage.ts): the URL it was
   * processing is noted as a retry, so the outage does not count against the URL's processing
   * attempts (a page whose commit failed three times in a failover was recorded INTERNAL_ERROR).
   */
  async noteOutage(): Promise<void> {
    if (this.inFlight !== null) await this.frontier.noteRetry(this.inFlight);
  }

  /** Stops the heartbeat, whichever way the session ends (a throw included). */
  close(): void {
    this.heartbeat.stop();
  }

  /** The session: an early stop, robots.txt, then page after page until a step ends it. */
  async run(): Promise<SessionResult> {
    const early = this.control.stop();
    if (early) return this.endFor(early);
    const robots = await ensureRobots(this.rt, { campaign: this.campaign, host: this.host, maxWaitMs: this.waitBound(), signal: this.signal });
    if (robots.kind === 'wait') {
      if (!robots.backingOff && robots.waitMs < this.threshold) return this.end('cap');
      return this.end('wait', { waitMs: robots.waitMs, backingOff: robots.backingOff, reason: robots.why });
    }
    this.view.delay = delayFor(this.s, this.control.current, robots.kind === 'ok' ? robots.crawlDelaySec : null);
    const mode = renderModeFor(this.control.current.hostRender, this.s);
    const clock = SessionClock.open(this.rt, this.campaign, {
      host: this.host,
      clockKey: this.clockKey,
      token: this.token,
      fence: this.frontier.fence,
      delay: this.view.delay,
      rendered: mode !== 'off',
      signal: this.signal,
    });
    const fetching = await openSessionFetcher(this.rt, this.campaign, { host: this.host, frontier: this.frontier, robots, mode });
    const f: Fetching = { ...fetching, robots, clock };
    try {
      for (;;) {
        const done = await this.turn(f);
        if (done) return done;
      }
    } finally {
      await fetching.close();
    }
  }

  /** One turn of the loop: the campaign's control, the host's record, the caps, then one URL. */
  private async turn(f: Fetching): Promise<SessionResult | null> {
    const unfetched = f.robots.kind === 'unavailable' || !!f.robots.refused;
    // After a commit that left the frontier empty the claim comes first (claimThenClock), and the control is read only if it finds a URL.
    if (unfetched || !this.frontier.emptyAfterCommit) {
      const why = await this.control.read();
      if (why) return this.endFor(why);
    }
    if (this.record.due()) await this.record.write('crawling', this.view);
    if (this.view.pages >= this.s.session.maxPages || Date.now() >= this.deadline || this.rt.draining || this.shedsFirstSession()) return this.end('cap');
    // Cancelled (its worker is going away, or Temporal gave up on it): stop at once, commit nothing more.
    this.signal.throwIfAborted();
    if (!unfetched) return this.fetchNext(f);
    // A host that may not be fetched at all (robots.txt unavailable, its address refused): its URLs are recorded, none requested.
    const claim = await this.frontier.claim();
    if (!claim) return this.drained();
    await recordUnfetched(this.rt, this.jobFor(f, claim, null), f.robots);
    this.view.pages++;
    return null;
  }

  /**
   * A host's first (local) session runs on the worker that started the host, so the dispatch puts
   * every first session of a campaign on one worker. While that worker is full (its floor of
   * sessions running, its thread saturated: src/worker/worker-load.ts), a first session that has
   * crawled a page and has more queued ends at its cap: the host's next session goes through the
   * task queue, whose slots a full worker does not ask for, to a worker with room (issue 38). Not
   * before its first page, nor with its frontier empty: a one-page host still ends here, in its
   * first session, as before.
   */
  private shedsFirstSession(): boolean {
    return !!this.input.local && this.view.pages > 0 && !this.frontier.emptyAfterCommit && (this.rt.deps.load?.full() ?? false);
  }

  /** The host clock, then the next URL: fetched, or (none queued) the revisits' turn. */
  private async fetchNext(f: Fetching): Promise<SessionResult | null> {
    if (this.frontier.emptyAfterCommit) return this.claimThenClock(f);
    const wait = await f.clock.take(this.waitBound());
    if (wait > 0) return this.waiting(f, wait);
    let claim;
    try {
      claim = await this.frontier.claim();
    } catch (err) {
      // A newer attempt took the host over: this one sends nothing, and
      // gives back the lease it just took (only if it still holds it).
      if (err instanceof SessionSupersededError) await f.clock.abandon().catch(() => undefined);
      throw err;
    }
    if (claim) return this.crawlPage(f, claim);
    // No request went out: the host's delay still counts from its real last request.
    await f.clock.abandon();
    return this.nothingQueued();
  }

  /**
   * The last page's commit left the frontier empty (a one-page host): the claim goes first, so a host with nothing more to fetch
   * ends without waiting out its delay for the clock and without taking and giving it back, nor reading the campaign's control
   * (nothing is left to pause or stop; issue 27: a second a host, 15 Redis commands). An empty claim clears the awake flag as in
   * fetchNext. A URL enqueued since the commit is claimed, then the clock taken for it; a wait for the clock past the threshold
   * ends the session with the URL still the host's current one, that claim noted as a retry: it uses up none of the URL's processing attempts.
   */
  private async claimThenClock(f: Fetching): Promise<SessionResult | null> {
    const claim = await this.frontier.claim();
    if (!claim) return this.nothingQueued();
    // Paused or stopped since: the URL stays the host's current one, its claim noted as a retry.
    const why = await this.control.read();
    if (why) {
      await this.frontier.noteRetry(claim.member);
      return this.endFor(why);
    }
    const wait = await f.clock.take(this.waitBound()).catch(async (err: unknown) => {
      // Cancelled while it waited: nothing was requested.
      await this.frontier.noteRetry(claim.member).catch(() => undefined);
      throw err;
    });
    if (wait === 0) return this.crawlPage(f, claim);
    await this.frontier.noteRetry(claim.member);
    return this.waiting(f, wait);
  }

  /**
   * The longest wait for the host clock (or robots.txt's) the session spends inside itself: the
   * durable-sleep threshold, and for a host's first session no longer than the time it has left.
   */
  private waitBound(): number {
    return this.input.local ? Math.min(this.threshold, this.timeLeft()) : this.threshold;
  }

  private timeLeft(): number {
    return Math.max(0, this.deadline - Date.now());
  }

  /**
   * The session ends waiting `wait` for the clock: a durable sleep in its workflow, or, shorter than
   * the threshold (a first session's time ran out first), its cap: a regular session waits it out.
   */
  private waiting(f: Fetching, wait: number): Promise<SessionResult> {
    if (wait < this.threshold) return this.end('cap');
    return this.end('wait', { waitMs: wait, reason: f.clock.waitReason(wait) });
  }

  /** The frontier is empty: the session ends, or (revisits, activities/revisit-parking.ts) takes what is due, sleeps until it is, or ends until it is. */
  private async nothingQueued(): Promise<SessionResult | null> {
    if (!this.revisits) return this.drained();
    const due = await this.revisits.moveDue();
    this.view.queue = due;
    const next = revisitTurn(due, this.threshold);
    if (next.kind === 'drained') return this.drained();
    if (next.kind === 'sleep') await sleep(next.ms, undefined, { signal: this.signal });
    if (next.kind !== 'until') return null;
    const parked = await parkUntilRevisit(this.slot, slotCap(this.control.current, this.s), next.ms, next.reason);
    return this.end(parked.how, parked.more);
  }

  /** One claimed URL through the page pipeline under its attempts' policy (activities/page-attempts.ts), then what its result asks of the session. */
  private async crawlPage(f: Fetching, claim: Claim): Promise<SessionResult | null> {
    const job = this.jobFor(f, claim);
    const woken = new WokenHosts();
    this.inFlight = claim.member;
    const res = await underAttemptPolicy(job, job.signal, {
      run: async () => processPage(this.rt, await this.fetchUnderClock(f, job), woken),
      unrequested: () => f.clock.abandon(),
      recordFailed: (message) => recordInternalError(this.rt, job, message),
    });
    // Committed, recorded or about to be noted as a retry below: no longer the session's in flight.
    this.inFlight = null;
    // Whatever the page's end (committed, or recorded failed for good after its links were routed), the hosts it made ready get their nudge.
    if (woken.hosts.length > 0) {
      await afterWake(this.rt, this.nudger, { campaignKey: this.input.campaignKey, campaignId: this.s.campaignId, revisits: !!this.revisits }, woken);
    }
    if (res.kind === 'budget') {
      await this.slot.hosts.requestStop('budget');
      this.nudger.nudge();
      return this.endFor('stopped');
    }
    this.view.lastUrl = res.url;
    this.view.lastStatus = res.status;
    if (res.kind === 'done') {
      this.view.pages++;
      return null;
    }
    await this.frontier.noteRetry(claim.member);
    if (res.waitMs >= this.threshold) return this.end('wait', { waitMs: res.waitMs, backingOff: true, reason: res.reason });
    // 0: not sent in the first session's time (activities/pipeline/fetch-stage.ts `unsent`): the next turn ends it at its cap.
    if (res.waitMs === 0) return null;
    this.rt.deps.metrics?.recordPolitenessWait(res.waitMs);
    await sleep(res.waitMs, undefined, { signal: this.signal });
    return null;
  }

  /**
   * The page's request under the clock this session holds, and the login turns it asks for: the clock goes back (with the delay
   * after a logged-out answer; a first login's first request takes the lease unused), the login runs a clock turn per request, and
   * the page is requested once more. Then the clock goes back as soon as the response is in (parsing and storing are not the host's
   * business); a URL recorded without a request (robots.txt, a budget) gives the lease back unused, so a host with thousands of
   * disallowed links does not wait its delay for each. Each request is stamped on the clock just before it goes out (after its wait
   * for an address slot): a session superseded meanwhile sends nothing and gives back nothing but a lease still its own.
   */
  private async fetchUnderClock(f: Fetching, job: PageJob): Promise<FetchedPage> {
    const login = f.login?.gateFor({ url: job.entry.url, depth: job.entry.depth, label: job.entry.label ?? null }) ?? null;
    const guard = (): SendGuard => ({ beforeSend: f.clock.stamp, ...(this.input.local ? { maxSlotWaitMs: this.timeLeft() } : {}) });
    let page;
    try {
      for (page = await fetchPage(this.rt, job, login, guard()); page.kind === 'login-needed'; page = await fetchPage(this.rt, job, login, guard())) {
        if (page.hostPauseMs !== null) await f.clock.release(page.hostPauseMs);
        // A login turn refused for a newer attempt aborts the hook's run: it records nothing of the host's login.
        const superseded = new AbortController();
        const signal = AbortSignal.any([this.signal, superseded.signal]);
        await this.logIn(f, login!.start(page.reason, { delayMs: this.view.delay.ms, signal }), superseded);
        if (!f.clock.held) await f.clock.take(Number.POSITIVE_INFINITY);
      }
    } catch (err) {
      // Superseded: nothing went out (the stamp refused it); the lease goes back unused if it is still this attempt's.
      if (err instanceof SessionSupersededError) {
        if (f.clock.held) await f.clock.abandon().catch(() => undefined);
        throw err;
      }
      // A request may have gone out: the host gets its delay either way.
      await f.clock.release(this.view.delay.ms);
      throw err;
    }
    if (page.hostPauseMs === null) await f.clock.abandon();
    else await f.clock.release(page.hostPauseMs, page.hostIdleMs ?? 0);
    return page;
  }

  /**
   * A login, a turn of the session: the hook's requests one at a time, each in a clock turn of its
   * own (a first login's first request has the clock already). What went wrong is the hook's to see
   * as its fetch's failure (a cancellation then ends the run).
   */
  private async logIn(f: Fetching, run: LoginRun, superseded: AbortController): Promise<void> {
    for (let step = await run.next(); step.kind === 'request'; step = await run.next()) {
      const { request, signal } = step;
      const sending = f.clock.turn(() => f.fetcher.fetch(request, { signal, beforeSend: f.clock.stamp }), signal);
      await step.settle(
        sending.catch((err: unknown) => {
          if (err instanceof SessionSupersededError) superseded.abort(err);
          throw err;
        }),
      );
      superseded.signal.throwIfAborted();
    }
  }

  private jobFor(f: Fetching, claim: Claim, allowedByRobots = robotsRules(f.robots)): PageJob {
    const { campaign, frontier, host, signal } = this;
    return { campaign, frontier, fetcher: f.fetcher, host, ...claim, delayMs: this.view.delay.ms, allowedByRobots, signal };
  }

  /** An end the control (or a spent budget) calls for; a stop gives the host's slot up first (its host workflow completes: activities/host-slot.ts). */
  private async endFor(why: SessionEnd): Promise<SessionResult> {
    if (why !== 'stopped') return this.end(why);
    const r = await giveUpStopped(this.slot);
    return this.end('stopped', { released: r.released, stop: r.stop });
  }

  private async end(how: SessionEnd, more: Partial<SessionResult> = {}): Promise<SessionResult> {
    this.close();
    // Drained, asleep, paused or stopped: the host's next request, if any, is a durable sleep or a
    // new session away, likely on another worker; its idle connection is let go rather than kept
    // alive (issue 27: in a crawl of one-page hosts, a socket and 40 KB of heap per finished host).
    // A session ended at its cap or for new settings goes on at once: its connection is kept.
    if (how !== 'cap' && how !== 'config') this.campaign.http.releaseHost?.(this.host);
    if (this.revisits) this.view.queue = await this.revisits.queue();
    const control = this.control.current;
    const result = await this.record.end(how, more, this.view, { stop: control.stop, configVersion: Math.max(this.campaign.version, control.version) });
    await this.nudger.flush();
    return result;
  }

  /** The frontier ran dry: the host's slot is given up, unless a newer dispatch holds it; the end's record takes the counts read after. */
  private async drained(): Promise<SessionResult> {
    const r = await giveUpDrained(this.slot);
    this.record.keep(r.counted);
    return this.end('drained', { released: r.released });
  }
}
