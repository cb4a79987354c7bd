// The bookkeeping of a campaign workflow, as a plain class. It holds no
// host list: per-host state is in Redis (src/redis/campaign-hosts.ts), and
// the campaign only keeps counters from its last look there, the operator's
// settings and whether it must look again. Its size does not depend on the
// number of hosts, and neither does what it carries through continue-as-new.
import type { CampaignSnapshot, CampaignSummary, DispatchInput, LoadSeedsInput, LoadSeedsResult, SteerChange } from '../activities/types';
import type { CampaignSettings } from '../src/config/campaign';
import type { CampaignResult, CampaignRunStatus, CampaignStatus } from './messages';
import { lostCheckDue } from './lost-pages';
import type { CampaignCarry } from './campaign-carry';
import { cardOf, resultOf, statusViewOf } from './campaign-views';

export type { CampaignCarry };

/** How often the campaign looks at Redis without being nudged: totals for the Web UI, and the domain watch. */
export const TICK_MS = 30_000;
/** The watch lists host workflows closed since its last look, less this margin for visibility's lag. */
export const WATCH_MARGIN_MS = 5 * 60_000;
/** Continue as new well before Temporal's limits. */
export const MAX_HISTORY_EVENTS = 8_000;

/**
 * Test-only limits (a workflow input field, never set by the CLI or the
 * client library): small values make a short test continue as new several
 * times while it reads its seed list, or meet the campaign's timers in
 * seconds. Absent: the constants here, and loadSeeds' own batch (activities/seeds.ts).
 */
export interface CampaignTestLimits {
  /** Continue as new past this many history events (Temporal's own suggestion still counts). */
  maxHistoryEvents?: number;
  /** Seeds read per loadSeeds call. */
  seedsPerCall?: number;
  /** In place of TICK_MS (the watch: every second look) and DISPATCH_RETRY_MS. */
  tickMs?: number;
  dispatchRetryMs?: number;
}
/**
 * A dispatch round that failed past its local activity's retries (Redis or
 * Temporal unreachable for minutes, a fault in the round) is tried again
 * after this long: failing the campaign would leave its host workflows
 * crawling with nobody to stop them, and its output unsealed.
 */
export const DISPATCH_RETRY_MS = 10_000;
/** How long a finishing campaign waits for its hosts to stop before it gives the rest up. */
export const FINISH_WAIT_MS = 2 * 60_000;

export class CampaignBook {
  status: CampaignRunStatus;
  stopReason: 'budget' | 'cancelled' | null = null;
  /** Something changed in Redis (or an operator acted): look again. */
  nudged = true;
  /** Operator requests in flight that may add work (add-seeds): the campaign is not done while one runs, nor continues as new. */
  inflight = 0;
  /**
   * The run is about to continue as new: no further loadSeeds call starts
   * (the one in flight, at most one batch, is awaited and its cursor carried).
   */
  continuing = false;
  finishing = false;
  /** The last dispatch round's failure, until a round succeeds (the status shows it). */
  dispatchError: { message: string; at: number; failures: number } | null = null;
  readonly carry: CampaignCarry;

  constructor(
    readonly settings: CampaignSettings,
    campaignKey: string,
    now: number,
    carry?: CampaignCarry,
    private readonly limits: CampaignTestLimits = {},
  ) {
    this.status = carry ? 'running' : 'starting';
    this.carry = carry ?? {
      campaignKey,
      configVersion: 1,
      startedAt: now,
      maxActiveHosts: settings.politeness.maxActiveHosts,
      minDelayMs: null,
      budgets: { maxPages: settings.budgets.maxPages, maxDepth: settings.budgets.maxDepth },
      pausedHosts: 0,
      paused: false,
      watchSince: now,
      snapshot: null,
      seeds: settings.seedsFile ? { next: { line: 0, byte: 0, seeds: 0 }, done: false, read: 0 } : null,
    };
  }

  /** Seeds still to read from the list. */
  get seeding(): boolean {
    return this.carry.seeds !== null && !this.carry.seeds.done;
  }

  /**
   * Whether to start another loadSeeds call: seeds left, the campaign open
   * and this run not about to continue as new (the next run reads on from
   * the cursor in the carry).
   */
  get seedCallDue(): boolean {
    return this.seeding && this.open && !this.continuing;
  }

  /** The next loadSeeds call: one bounded batch from the cursor (one activity, a few history events). */
  seedInput(): LoadSeedsInput {
    const next = this.carry.seeds?.next ?? { line: 0, byte: 0, seeds: 0 };
    return { campaignKey: this.carry.campaignKey, from: next, ...(this.limits.seedsPerCall ? { maxSeeds: this.limits.seedsPerCall } : {}) };
  }

  seeded(r: LoadSeedsResult): void {
    const prev = this.carry.seeds ?? { next: r.next, done: false, read: 0 };
    this.carry.seeds = { next: r.next, done: r.done, read: prev.read + r.seeds };
    this.nudged = true;
  }

  /** Whether this campaign, about to finish drained, first looks for pages lost with a worker's disk (workflows/lost-pages.ts). */
  get lostCheckDue(): boolean {
    return lostCheckDue(this.settings, this.carry.lostChecks, this.stopReason !== null);
  }

  /** A look for lost pages ran: `requeued` of them went back in their frontiers, and a dispatch round is due at once if any did. */
  lostChecked(requeued: number): void {
    this.carry.lostChecks = (this.carry.lostChecks ?? 0) + 1;
    if (requeued > 0) this.nudged = true;
  }

  seedListFailed(error: string): void {
    if (this.carry.seeds) this.carry.seeds = { ...this.carry.seeds, done: true, error: error.slice(0, 500) };
    this.nudged = true;
  }

  onNudge(): void {
    this.nudged = true;
  }

  requestStop(reason: 'budget' | 'cancelled'): void {
    this.stopReason ??= reason;
  }

  /** Whether the loop should look at Redis now. */
  get due(): boolean {
    return this.nudged || this.stopReason !== null;
  }

  /**
   * Is the watch due at `now`: a minute after the campaign started, then a
   * minute after its last look. Timed from the last look, not from
   * `watchSince`, which reaches back WATCH_MARGIN_MS and would make every
   * round a watch (a visibility query per nudge).
   */
  watchDue(now: number): boolean {
    return now - (this.carry.watchedAt ?? this.carry.watchSince) >= 2 * this.tickMs;
  }

  /** How long the loop waits for a nudge before it looks anyway (TICK_MS). */
  get tickMs(): number {
    return this.limits.tickMs ?? TICK_MS;
  }

  /** The watch looked at `now`: the next one lists hosts closed since shortly before. */
  watchedAt(now: number): void {
    this.carry.watchedAt = now;
    this.carry.watchSince = Math.max(this.carry.startedAt, now - WATCH_MARGIN_MS);
  }

  /**
   * A dispatch round's input. While running: free slots filled, the watch
   * when due. Finishing: no host started, and the watch every round over
   * the whole campaign (hosts whose workflow ended abnormally are named).
   */
  dispatchInput(workflow: { workflowId: string; taskQueue: string }, watch: boolean): DispatchInput {
    const base = { campaignKey: this.carry.campaignKey, campaignId: this.settings.campaignId, campaignWorkflowId: workflow.workflowId, taskQueue: workflow.taskQueue };
    return this.finishing
      ? { ...base, maxActiveHosts: 0, watch: true, watchSince: new Date(this.carry.startedAt).toISOString() }
      : { ...base, maxActiveHosts: this.carry.maxActiveHosts, watch, watchSince: new Date(this.carry.watchSince).toISOString() };
  }

  /**
   * Takes what a dispatch round saw. Returns whether the campaign is done:
   * no host holds a slot, none is waiting for one and no operator request
   * could still add work.
   */
  onSnapshot(s: CampaignSnapshot, now: number): 'done' | 'again' | 'wait' {
    this.dispatchError = null;
    this.carry.snapshot = { totals: { ...s.totals, activeHosts: s.active, readyHosts: s.ready }, problems: s.problems, at: now };
    this.carry.configVersion = Math.max(this.carry.configVersion, s.configVersion);
    if (s.stop === 'budget' || s.stop === 'cancelled') this.requestStop(s.stop);
    if (this.stopReason !== null) return 'done';
    // A revisit campaign keeps its sites fresh until cancelled or out of budget: it is never done on its own.
    // Nor while its seed list is still being read: the hosts of the rest are not in Redis yet.
    if (s.active === 0 && s.ready === 0 && this.inflight === 0 && !this.seeding && !s.paused && !this.settings.revisit?.enabled) return 'done';
    // A full batch went out and more hosts wait: another round at once.
    if (s.dispatched > 0 && s.ready > 0) this.nudged = true;
    return this.nudged ? 'again' : 'wait';
  }

  /** A dispatch round failed: look again after DISPATCH_RETRY_MS (returned). */
  onDispatchFailed(message: string, now: number): number {
    this.dispatchError = { message: message.slice(0, 500), at: now, failures: (this.dispatchError?.failures ?? 0) + 1 };
    this.nudged = true;
    return this.limits.dispatchRetryMs ?? DISPATCH_RETRY_MS;
  }

  /**
   * The settings version an operator change becomes. Taken for good only by
   * applied(): a change the activity refuses (an unknown host) uses none.
   */
  nextVersion(): number {
    return this.carry.configVersion + 1;
  }

  /** What an accepted change means for what the campaign itself shows. */
  applied(change: SteerChange, result: { configVersion: number; budgets: CampaignCarry['budgets'] }): void {
    this.carry.configVersion = Math.max(this.carry.configVersion, result.configVersion);
    this.carry.budgets = result.budgets;
    if (change.kind === 'pause' || change.kind === 'resume') this.carry.paused = change.kind === 'pause';
    if (change.kind === 'pause-host') this.carry.pausedHosts++;
    if (change.kind === 'resume-host') this.carry.pausedHosts = Math.max(0, this.carry.pausedHosts - 1);
    if (change.kind === 'delay' && change.host === null) this.carry.minDelayMs = change.minDelayMs;
    this.nudged = true;
  }

  /** The steering the Web UI shows in the campaign's memo. */
  steeringMemo(): { budgets: CampaignCarry['budgets']; minDelayMs: number; maxActiveHosts: CampaignCarry['maxActiveHosts']; paused: boolean } {
    const c = this.carry;
    return { budgets: c.budgets, minDelayMs: c.minDelayMs ?? this.settings.politeness.minDelayMs, maxActiveHosts: c.maxActiveHosts, paused: c.paused };
  }

  get open(): boolean {
    return !this.finishing && this.stopReason === null;
  }

  /**
   * Past the history limit and no operator request in flight. Reading the
   * seed list does not hold it off: the list's cursor is in the carry, so a
   * list of millions is read over as many runs as it takes.
   */
  shouldContinueAsNew(info: { historyLength: number; continueAsNewSuggested: boolean }): boolean {
    return this.inflight === 0 && (info.continueAsNewSuggested || info.historyLength > (this.limits.maxHistoryEvents ?? MAX_HISTORY_EVENTS));
  }

  finalStatus(): CampaignRunStatus {
    return this.stopReason === 'budget' ? 'budget-exhausted' : this.stopReason === 'cancelled' ? 'cancelled' : 'completed';
  }

  /** What `crawler status` and the status query show (workflows/campaign-views.ts). */
  statusView(campaignId: string): CampaignStatus {
    return statusViewOf(this, campaignId);
  }

  /** The Web UI's status card: as of the last look at Redis, or the final summary's totals at the end. */
  card(campaignId: string, summary?: CampaignSummary): string {
    return cardOf(this, campaignId, summary);
  }

  result(campaignId: string, summary: CampaignSummary, now: number): CampaignResult {
    return resultOf(this, campaignId, summary, now);
  }
}
