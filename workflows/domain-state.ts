// The bookkeeping of one host workflow, as a plain class: what the host is
// doing, what the last session said, and what to do next. Pure (no
// Temporal imports), so every rule here is unit-tested without a server;
// workflows/domain-crawl.ts only registers handlers, waits and calls
// activities around it.
import type { HostStats, SessionInput, SessionResult } from '../activities/types';
import { hostFailureBackoffMs, LONG_SLEEP_MS } from '../src/config/retry-policy';
import type { RevisitView } from '../src/redis/campaign-hosts';
import { hostStatsOf } from '../src/stats/counters';
import type { DomainState, DomainStatus } from './messages';

export interface DomainCrawlInput {
  campaignId: string;
  /** Namespace of the campaign's Redis keys (campaign ID + first run ID). */
  campaignKey: string;
  campaignWorkflowId: string;
  host: string;
  /** Dispatch generation that started this run (wake signals bring newer ones). */
  gen: number;
  configVersion: number;
  /** Carried across continue-as-new. */
  carry?: DomainCarry;
}

export interface DomainCarry {
  stats: HostStats;
  sessions: number;
  pages: number;
  /** Settings version a pause was seen at; the host waits for a newer one. */
  pausedAt: number | null;
  /** The CrawlState the run showed last: the next run starts with it (continue-as-new keeps search attributes). */
  shown?: DomainState | null;
}

/**
 * The CrawlState the dispatch starts a host's workflow with: what its first
 * session shows, so that a host done in one session never upserts it.
 */
export const HOST_STARTED_AS: DomainState = 'crawling';

export interface DomainCrawlResult {
  host: string;
  stats: HostStats;
  reason: 'drained' | 'budget' | 'cancelled';
}

/** What the workflow does after a session. */
/** `wakeable`: a wake (new URLs) ends the sleep early; only a revisit host's wait for its next due URL is. */
export type DomainNext = { kind: 'continue' } | { kind: 'sleep'; ms: number; wakeable?: boolean } | { kind: 'await-wake'; ms: number } | { kind: 'done' };

/** A paused host looks again this often even without a signal (a lost one costs this much, never a stuck host). */
export const PAUSE_RECHECK_MS = 10 * 60_000;
/** Waiting for a wake that must be on its way (a dispatch that died between start and bookkeeping is retried). */
export const AWAIT_WAKE_MS = 60_000;
/** Continue as new well before Temporal's history limits (a session is 6 to 11 events). */
export const MAX_HISTORY_EVENTS = 2_000;

export class DomainBook {
  readonly input: DomainCrawlInput;
  gen: number;
  configVersion: number;
  finish: DomainCrawlResult['reason'] | null = null;
  /** A wake arrived since the current session started: run another before closing. */
  wakePending = false;
  state: DomainState = 'starting';
  stats: HostStats;
  sessions: number;
  pages: number;
  pausedAt: number | null;
  delayMs = 0;
  delayReason = '';
  lastUrl: string | null = null;
  lastStatus: number | null = null;
  frontier: number | null = null;
  nextWakeAt: number | null = null;
  /** Revisit campaigns: the revisit queue as the last session left it. */
  revisit: RevisitView | null = null;
  /** Sessions that failed in a row. */
  failures = 0;
  /** The last session gave the host's slot up (a workflow that ends otherwise must still do it). */
  released = false;
  private sleptMs = 0;
  /** Regular sessions started in this run: each one's number (SessionInput.session), which a lost-session message names. */
  private sessionSeq = 0;
  private published: DomainState | null;
  private publishedRevisit = '';

  /**
   * `startsShowing`: the run knows its CrawlState at start (HOST_STARTED_AS,
   * or the carried one) and publishes only a change from it. Without it (runs
   * of the legacy type) the first state is published whatever it is.
   */
  constructor(
    input: DomainCrawlInput,
    private readonly startsShowing = false,
  ) {
    this.input = input;
    this.gen = input.gen;
    this.configVersion = input.configVersion;
    this.stats = input.carry?.stats ?? hostStatsOf();
    this.sessions = input.carry?.sessions ?? 0;
    this.pages = input.carry?.pages ?? 0;
    this.pausedAt = input.carry?.pausedAt ?? null;
    this.published = startsShowing ? (input.carry ? (input.carry.shown ?? null) : HOST_STARTED_AS) : null;
    // A continued run is where the run before left off (paused, sleeping), until its first session says otherwise.
    if (startsShowing && input.carry?.shown) this.state = input.carry.shown;
  }

  onWake(gen: number): void {
    this.gen = Math.max(this.gen, gen);
    this.wakePending = true;
  }

  onFinish(reason: DomainCrawlResult['reason']): void {
    this.finish ??= reason;
  }

  onSteer(configVersion: number): void {
    this.configVersion = Math.max(this.configVersion, configVersion);
  }

  /** No session has run in this workflow yet, in this run or a run before it continued as new. */
  get firstSession(): boolean {
    return this.sessions === 0 && this.failures === 0;
  }

  /** Paused, and no settings version newer than the pause has been heard of. */
  get waitingForResume(): boolean {
    return this.pausedAt !== null && this.configVersion <= this.pausedAt;
  }

  /** After a pause wait: the next session checks the control itself (and ends at once if still paused). */
  resumed(): void {
    this.pausedAt = null;
  }

  /** `local`: the session runs as a local activity, in the workflow's task (capped at session.firstLocalMs). */
  sessionInput(local = false): SessionInput {
    this.wakePending = false;
    const input: SessionInput = {
      campaignKey: this.input.campaignKey,
      campaignWorkflowId: this.input.campaignWorkflowId,
      host: this.input.host,
      gen: this.gen,
      configVersion: this.configVersion,
      ...(this.sleptMs ? { sleptMs: this.sleptMs } : {}),
      ...(local ? { local: true as const } : { session: ++this.sessionSeq }),
    };
    this.sleptMs = 0;
    this.state = 'crawling';
    return input;
  }

  onSession(r: SessionResult): DomainNext {
    this.sessions++;
    this.failures = 0;
    this.pages += r.pages;
    this.stats = r.stats;
    this.frontier = r.frontier;
    this.delayMs = r.delayMs;
    this.delayReason = r.reason;
    this.configVersion = Math.max(this.configVersion, r.configVersion);
    this.released = r.released;
    if (r.revisit) this.revisit = r.revisit;
    if (r.lastUrl !== null) {
      this.lastUrl = r.lastUrl;
      this.lastStatus = r.lastStatus;
    }
    switch (r.end) {
      case 'wait':
        this.state = r.backingOff ? 'backing-off' : 'sleeping';
        return r.wakeable ? { kind: 'sleep', ms: r.waitMs, wakeable: true } : { kind: 'sleep', ms: r.waitMs };
      case 'paused':
        this.state = 'paused';
        this.pausedAt = r.configVersion;
        return { kind: 'continue' };
      case 'stopped':
        this.finish ??= r.stop === 'budget' ? 'budget' : r.stop === 'cancelled' ? 'cancelled' : 'drained';
        this.state = 'done';
        return { kind: 'done' };
      case 'drained':
        if (this.wakePending) return { kind: 'continue' };
        if (r.released) {
          this.state = 'done';
          return { kind: 'done' };
        }
        // A newer dispatch holds the slot: its wake is on its way.
        return { kind: 'await-wake', ms: AWAIT_WAKE_MS };
      default:
        // cap or config: straight into the next session.
        return { kind: 'continue' };
    }
  }

  /**
   * The worker running the regular session died (its lease ran out): that session is abandoned and
   * the next one starts at once, on a live worker. No back-off: the worker failed, not the host.
   */
  onSessionLost(): DomainNext {
    this.sessions++;
    this.delayReason = 'the worker running the last session stopped answering: a new session started on another worker';
    return { kind: 'continue' };
  }

  onSessionFailed(error: string): DomainNext {
    this.failures++;
    this.state = 'backing-off';
    this.delayReason = `session failed ${this.failures} time(s) in a row: ${error.slice(0, 300)}`;
    // The workflow's own back-off when a session fails for good (Redis down, a bug): durable, growing, capped.
    return { kind: 'sleep', ms: hostFailureBackoffMs(this.failures) };
  }

  /** A durable sleep begins (`now` from the workflow clock) or ended after `ms`. */
  sleeping(now: number, ms: number): void {
    this.nextWakeAt = now + ms;
  }

  slept(ms: number): void {
    this.nextWakeAt = null;
    this.sleptMs += ms;
  }

  shouldContinueAsNew(info: { historyLength: number; continueAsNewSuggested: boolean }): boolean {
    return info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS;
  }

  carry(): DomainCrawlInput {
    const carry: DomainCarry = { stats: this.stats, sessions: this.sessions, pages: this.pages, pausedAt: this.pausedAt };
    if (this.startsShowing) carry.shown = this.published;
    return { ...this.input, gen: this.gen, configVersion: this.configVersion, carry };
  }

  /**
   * The coarse state operators filter on (CrawlState), when it changed since
   * last published: a short sleep between sessions is part of crawling.
   */
  takeStateChange(sleepMs = 0): DomainState | null {
    const shown: DomainState = this.state === 'sleeping' && sleepMs < LONG_SLEEP_MS ? 'crawling' : this.state;
    if (shown === this.published) return null;
    this.published = shown;
    return shown;
  }

  /**
   * The revisit queue for the Web UI's search attributes, when it changed
   * since last published (revisit campaigns only: null otherwise, so other
   * hosts never pay for it).
   */
  takeRevisitChange(): { nextDueAt: string | null; dueDay: number } | null {
    if (!this.revisit) return null;
    const { nextDueAt, dueDay } = this.revisit;
    const key = `${nextDueAt}|${dueDay}`;
    if (key === this.publishedRevisit) return null;
    this.publishedRevisit = key;
    return { nextDueAt, dueDay };
  }

  status(): DomainStatus {
    return {
      campaignId: this.input.campaignId,
      host: this.input.host,
      state: this.state,
      paused: this.pausedAt !== null,
      stats: this.stats,
      delayMs: this.delayMs,
      delayReason: this.delayReason,
      lastUrl: this.lastUrl,
      lastStatus: this.lastStatus,
      nextWakeAt: this.nextWakeAt === null ? null : new Date(this.nextWakeAt).toISOString(),
      frontier: this.frontier,
      configVersion: this.configVersion,
      sessions: this.sessions,
      pages: this.pages,
      ...(this.revisit ? { revisit: this.revisit } : {}),
    };
  }

  result(): DomainCrawlResult {
    return { host: this.input.host, stats: this.stats, reason: this.finish ?? 'drained' };
  }
}
