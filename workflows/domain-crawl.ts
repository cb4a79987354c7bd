// One long-running workflow per politeness key (host): fetch one URL at a
// time through an activity, then sleep durably for the host's crawl-delay.
// Deterministic: imports only @temporalio/workflow and pure modules.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CrawlerActivities, CrawlStepResult } from '../activities/types';
import { crawlDelayMs, type CampaignSettings } from '../src/config/campaign';
import { CrawlErrors, CrawlPages, CrawlState } from '../src/temporal/search-attributes';
import { operatorState, type OperatorState } from './host-state';
import {
  cancelSignal,
  configSignal,
  domainReportSignal,
  domainStatusQuery,
  emptyStats,
  finishSignal,
  pauseSignal,
  politenessSignal,
  resumeSignal,
  wakeSignal,
  type DomainReport,
  type DomainState,
  type HostStats,
} from './messages';

export interface DomainCrawlInput {
  campaignId: string;
  /** Namespace of the campaign's Redis keys (campaign ID + first run ID). */
  campaignKey: string;
  campaignWorkflowId: string;
  host: string;
  configVersion: number;
  politeness: CampaignSettings['politeness'];
  /** Why politeness.minDelayMs is what it is, when an operator set it (shown by domainStatus). */
  politenessNote?: string;
  fetchTotalTimeoutMs: number;
  idleCloseMs: number;
  paused?: boolean;
  /** Carried across continue-as-new and restarts after an idle close. */
  carry?: DomainCarry;
}

export interface DomainCarry {
  stats: HostStats;
  seq: number;
  robots?: {
    crawlDelaySec: number | null;
    unavailable: boolean;
    /** Why robots.txt could not be had (e.g. DNS_FAILURE, HTTP_503): the typed reason its URLs are recorded with. */
    cause?: { code: string; detail: string };
  };
  lastUrl: string | null;
  lastStatus: number | null;
  /** The URL waiting for another attempt after a transient failure. */
  retry?: { url: string; attempts: number };
}

export interface DomainCrawlResult {
  host: string;
  stats: HostStats;
  reason: 'idle' | 'drained' | 'budget' | 'cancelled';
}

/** Patch ID: the page step runs as a local activity. */
export const LOCAL_STEP_PATCH = 'crawl-step-local-activity';
/** Report progress to the campaign this often (pages), besides every state change that matters. */
const PROGRESS_EVERY = 25;
/** …and at least this often while pages come in, so a slow host's counts stay current. */
const PROGRESS_INTERVAL_MS = 60_000;
/**
 * Patch ID: the host's coarse state (crawling, sleeping, backing-off, …) is
 * published and reported to the campaign whenever it changes, and progress
 * is also reported by time. Runs recorded before it keep the old reports.
 */
export const STATE_REPORTS_PATCH = 'domain-state-reports';
/** Continue as new well before Temporal's history limits. */
const MAX_HISTORY_EVENTS = 4000;
/** Robots.txt that keeps answering 5xx/429 is retried this many times before the host is treated as disallowed. */
const ROBOTS_ATTEMPTS = 3;

export async function domainCrawl(input: DomainCrawlInput): Promise<DomainCrawlResult> {
  // Decided once per run: a run that began before the patch keeps its old
  // command sequence to the end (it picks the patch up at continue-as-new).
  const stateReports = patched(STATE_REPORTS_PATCH);
  const carry: DomainCarry = input.carry ?? { stats: emptyStats(), seq: 0, lastUrl: null, lastStatus: null };
  let paused = input.paused ?? false;
  let finish: DomainCrawlResult['reason'] | null = null;
  let wakePending = false;
  let state: DomainState = 'starting';
  // Operators change these while the domain runs (campaign signals); they
  // travel on through continue-as-new in the input.
  let politeness = input.politeness;
  let politenessNote = input.politenessNote;
  let configVersion = input.configVersion;
  const baseDelayReason = () => {
    const robotsSec = carry.robots?.crawlDelaySec;
    // robots.txt wins when it asks for more than the minimum (operators only make it stricter).
    if (robotsSec && (!politenessNote || crawlDelayMs(politeness, robotsSec) > politeness.minDelayMs)) return `robots.txt Crawl-delay ${robotsSec} s`;
    return politenessNote ?? `minimum delay ${politeness.minDelayMs} ms`;
  };
  let delayReason = baseDelayReason();
  let nextWakeAt: number | null = null;
  let frontier: number | null = null;

  const acts = proxyActivities<CrawlerActivities>({
    // A fetch is bounded by its total timeout; storage and Redis get the margin.
    startToCloseTimeout: input.fetchTotalTimeoutMs + 60_000,
    // Short heartbeat timeout: a killed worker's step is retried elsewhere within seconds.
    heartbeatTimeout: 15_000,
    retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000, nonRetryableErrorTypes: ['InvalidCampaignInput'] },
  });

  // The page step runs as a local activity: it executes inside this
  // workflow's task on the worker that holds the workflow, and lands in
  // history as one marker. Per page that is one workflow task (the timer's)
  // instead of three, which is what lets the Temporal server keep up with
  // hundreds of hosts (docs/architecture.md). A worker that dies mid-step
  // fails the workflow task, and another worker replays and re-runs the
  // step (sticky claim, same-owner host clock).
  const local = proxyLocalActivities<CrawlerActivities>({
    startToCloseTimeout: input.fetchTotalTimeoutMs + 60_000,
    // Only infrastructure failures (Redis, storage) get here; HTTP and
    // network failures come back as `retry` results and a durable sleep.
    retry: { initialInterval: 1_000, backoffCoefficient: 2, maximumInterval: 60_000, nonRetryableErrorTypes: ['InvalidCampaignInput'] },
  });

  setHandler(wakeSignal, ({ seq }) => {
    carry.seq = Math.max(carry.seq, seq);
    wakePending = true;
  });
  setHandler(finishSignal, ({ reason }) => {
    finish ??= reason;
  });
  setHandler(cancelSignal, () => {
    finish ??= 'cancelled';
  });
  setHandler(pauseSignal, () => {
    paused = true;
  });
  setHandler(resumeSignal, () => {
    paused = false;
  });
  // Takes effect from the next sleep; a sleep under way runs its course.
  setHandler(politenessSignal, ({ minDelayMs, reason }) => {
    politeness = { ...politeness, minDelayMs };
    politenessNote = reason;
    if (!carry.retry && state !== 'backing-off') delayReason = baseDelayReason();
  });
  // The next activity asks for settings at least this new, so workers reload them.
  setHandler(configSignal, ({ configVersion: v }) => {
    configVersion = Math.max(configVersion, v);
  });
  const delayMs = () => crawlDelayMs(politeness, carry.robots?.crawlDelaySec);
  setHandler(domainStatusQuery, () => ({
    campaignId: input.campaignId,
    host: input.host,
    state,
    paused,
    stats: carry.stats,
    delayMs: delayMs(),
    delayReason,
    lastUrl: carry.lastUrl,
    lastStatus: carry.lastStatus,
    nextWakeAt: nextWakeAt === null ? null : new Date(nextWakeAt).toISOString(),
    frontier,
    minDelayMs: politeness.minDelayMs,
    configVersion,
  }));

  let shownState: OperatorState | null = null;
  /** The published state changed and the campaign has not heard of it yet. */
  let unreported = false;
  let lastReportAt = Date.now();
  /** How long the domain slept before the step about to run (for the politeness-wait metric). */
  let sleptMs = 0;
  /** `sleepMs`: the length of the sleep being entered, for sleeping / backing-off. */
  const setState = (next: DomainState, sleepMs = 0) => {
    state = next;
    // Search attributes only change on coarse transitions (host-state.ts):
    // per-page updates would double the history for no benefit to someone
    // filtering the UI.
    const coarse: OperatorState = stateReports
      ? operatorState(next, sleepMs, shownState)
      : next === 'sleeping' || next === 'crawling'
        ? 'crawling'
        : (next as OperatorState);
    if (coarse !== shownState) {
      shownState = coarse;
      upsertSearchAttributes([{ key: CrawlState, value: coarse }]);
      unreported = stateReports;
    }
  };

  const campaign = getExternalWorkflowHandle(input.campaignWorkflowId);
  const report = async (kind: DomainReport['kind']) => {
    upsertSearchAttributes([
      { key: CrawlPages, value: carry.stats.fetched },
      { key: CrawlErrors, value: carry.stats.failed },
    ]);
    unreported = false;
    lastReportAt = Date.now();
    // The campaign shows what operators see; the fine-grained state flips every page.
    const shown: DomainState = stateReports && shownState ? shownState : state;
    try {
      await campaign.signal(domainReportSignal, { host: input.host, kind, seq: carry.seq, stats: carry.stats, state: shown, frontier });
    } catch (err) {
      // The campaign is gone (completed or terminated): nobody to crawl for.
      log.warn('campaign unreachable, finishing domain', { host: input.host, error: String(err) });
      finish ??= 'cancelled';
    }
  };

  /** Durable sleep that pause/finish can cut short. */
  const pauseFor = async (ms: number, why: DomainState) => {
    if (ms <= 0) return;
    setState(why, ms);
    // Entering a long sleep or a back-off is what an operator looks for in `crawler status`.
    if (unreported) await report('progress');
    nextWakeAt = Date.now() + ms;
    await condition(() => finish !== null, ms);
    nextWakeAt = null;
    sleptMs += ms;
  };

  // robots.txt first: its Crawl-delay sets the pace, its rules gate every URL.
  const ensureRobots = async () => {
    setState('robots');
    for (let attempt = 1; finish === null; ) {
      const r = await acts.loadRobots({ campaignKey: input.campaignKey, host: input.host, configVersion });
      if (r.kind === 'ok') {
        carry.robots = { crawlDelaySec: r.crawlDelaySec, unavailable: false };
        delayReason = baseDelayReason();
        if (r.fetched) await pauseFor(delayMs(), 'sleeping');
        return;
      }
      if (r.kind === 'wait') {
        await pauseFor(r.waitMs, 'sleeping');
        continue;
      }
      if (attempt >= ROBOTS_ATTEMPTS) {
        carry.robots = { crawlDelaySec: null, unavailable: true, ...(stateReports && r.code ? { cause: { code: r.code, detail: r.detail } } : {}) };
        return;
      }
      delayReason = `robots.txt unavailable (${r.detail}), retry ${attempt}/${ROBOTS_ATTEMPTS - 1}`;
      await pauseFor(Math.max(delayMs(), 10_000 * 2 ** (attempt - 1)), 'backing-off');
      attempt++;
    }
  };

  let sinceReport = 0;
  /** Steps of this run so far: replay counts the same, so a step's id is the same on every attempt. */
  let steps = 0;
  for (;;) {
    if (finish !== null) break;
    if (paused) {
      setState('paused');
      await report('progress');
      await condition(() => !paused || finish !== null);
      continue;
    }
    if (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS) {
      await allHandlersFinished();
      return continueAsNew<typeof domainCrawl>({ ...input, politeness, politenessNote, configVersion, paused, carry });
    }
    if (politeness.respectRobots && !carry.robots) {
      await ensureRobots();
      continue;
    }
    setState('crawling');
    // Any wake that arrives from here on may concern URLs this step does not see.
    wakePending = false;
    const step = {
      campaignKey: input.campaignKey,
      campaignWorkflowId: input.campaignWorkflowId,
      host: input.host,
      configVersion,
      delayMs: delayMs(),
      robotsUnavailable: carry.robots?.unavailable,
      ...(carry.robots?.cause ? { robotsCause: carry.robots.cause } : {}),
      retry: carry.retry,
      ...(stateReports ? { sleptMs } : {}),
      stepId: `${workflowInfo().runId}/${++steps}`,
    };
    sleptMs = 0;
    // Histories recorded before the step became a local activity replay the
    // remote one.
    const res: CrawlStepResult = patched(LOCAL_STEP_PATCH) ? await local.crawlStep(step) : await acts.crawlStep(step);
    if (res.kind === 'retry') {
      carry.retry = { url: res.url, attempts: carry.retry?.url === res.url ? carry.retry.attempts + 1 : 1 };
      carry.lastUrl = res.url;
      carry.lastStatus = res.status;
      delayReason = res.reason;
      await pauseFor(res.waitMs, 'backing-off');
      continue;
    }
    if (carry.retry) {
      carry.retry = undefined;
      delayReason = baseDelayReason();
    }
    if (res.kind === 'done') {
      frontier = res.remaining;
      carry.lastUrl = res.url;
      carry.lastStatus = res.status;
      carry.stats.bytes += res.bytes;
      // `counted` is absent from results recorded before it existed.
      const counted = res.counted ?? (res.outcome === 'fetched' ? 'fetched' : res.requested || res.outcome === 'error' ? 'failed' : 'skipped');
      if (counted === 'fetched') carry.stats.fetched++;
      else if (counted === 'failed') carry.stats.failed++;
      else carry.stats.skipped++;
      if (++sinceReport >= PROGRESS_EVERY || (stateReports && Date.now() - lastReportAt >= PROGRESS_INTERVAL_MS)) {
        sinceReport = 0;
        await report('progress');
      }
      // A durable sleep after every request, however short: besides pacing
      // the host, it ends the workflow task, which is when signals and
      // updates (pause, set-rate) get in. Timers resolve to about a second
      // on the server, so sub-second delays come out near a second.
      if (res.requested) await pauseFor(delayMs(), 'sleeping');
      continue;
    }
    if (res.kind === 'wait') {
      if (res.reason.startsWith('robots.txt')) carry.robots = undefined;
      else delayReason = res.reason;
      await pauseFor(res.waitMs, 'sleeping');
      continue;
    }
    if (res.kind === 'budget-exhausted') {
      finish = 'budget';
      setState('done');
      await report('budget-exhausted');
      await allHandlersFinished();
      return { host: input.host, stats: carry.stats, reason: 'budget' };
    }
    // Empty frontier.
    frontier = 0;
    if (wakePending) continue;
    setState('idle');
    await report('idle');
    const woken = await condition(() => wakePending || finish !== null || paused, input.idleCloseMs);
    if (woken) continue;
    // Idle long enough: close. The campaign starts us again if URLs arrive.
    setState('done');
    await report('closed');
    if (wakePending) continue;
    await allHandlersFinished();
    return { host: input.host, stats: carry.stats, reason: 'idle' };
  }
  setState('done');
  await report('closed');
  await allHandlersFinished();
  return { host: input.host, stats: carry.stats, reason: finish ?? 'drained' };
}
