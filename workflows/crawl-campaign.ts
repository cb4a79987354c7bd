// A crawl campaign: validates its input, seeds the frontiers, starts one
// domainCrawl child per host, routes "new URLs for host X" to the right
// child and completes when every host is drained or a budget is reached.
// Deterministic: imports only @temporalio/workflow and pure modules.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  sleep,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { CrawlerActivities } from '../activities/types';
import { CampaignInputError, resolveCampaignSettings, type CampaignInput, type CampaignSettings } from '../src/config/campaign';
import {
  operatorDelayReason,
  SteeringError,
  validateAddSeeds,
  validateHostRequest,
  validateSetBudgets,
  validateSetConcurrency,
  validateSetPoliteness,
} from '../src/config/steering';
import { CrawlCampaign, CrawlErrors, CrawlHost, CrawlPages, CrawlState } from '../src/temporal/search-attributes';
import { domainCrawl, type DomainCrawlInput } from './domain-crawl';
import { domainWorkflowId } from './ids';
import {
  addSeedsUpdate,
  campaignStatusQuery,
  cancelSignal,
  configSignal,
  domainReportSignal,
  emptyStats,
  finishSignal,
  pauseCampaignUpdate,
  pauseHostUpdate,
  pauseSignal,
  politenessSignal,
  resumeCampaignUpdate,
  resumeHostUpdate,
  resumeSignal,
  setBudgetsUpdate,
  setConcurrencyUpdate,
  setPolitenessUpdate,
  urlsDiscoveredSignal,
  wakeSignal,
  type CampaignResult,
  type CampaignRunStatus,
  type DomainState,
  type HostStats,
  type HostStatus,
} from './messages';

interface HostEntry {
  state: HostStatus['state'];
  /** Wakes sent so far; a domain's report only counts if it has seen the latest. */
  seq: number;
  /** New URLs arrived while the domain was busy: wake it again when it reports idle. */
  dirty: boolean;
  stats: HostStats;
  domainState: DomainState;
  frontier?: number | null;
}

export interface CampaignCarry {
  campaignKey: string;
  configVersion: number;
  startedAt: number;
  hosts: Record<string, HostEntry>;
  pending: string[];
  paused: boolean;
  problems: string[];
  /** What operators changed (absent from carries written before steering existed). */
  steering?: CampaignSteeringCarry;
}

export interface CampaignSteeringCarry {
  /** Campaign-wide minimum delay set by an operator; null = the input's. */
  minDelayMs: number | null;
  hostDelays: Record<string, number>;
  pausedHosts: string[];
  /** The budgets in the current settings version (the input's until setBudgets). */
  budgets: { maxPages: number | null; maxDepth: number | null };
  /** Most hosts crawled at once, null = unlimited (absent from carries written before it existed). */
  maxActiveHosts?: number | null;
}

export type CrawlCampaignInput = CampaignInput & { carry?: CampaignCarry };

const MAX_HISTORY_EVENTS = 8000;
/** Patch ID: the campaign continues as new when reports alone fill its history. */
export const CAN_ON_REPORTS_PATCH = 'campaign-can-on-reports';
/** Patch ID: a dirty host's idle report leads to a wake at once. */
export const DIRTY_IDLE_WAKE_PATCH = 'dirty-idle-wake';
/** How many children are started or signalled concurrently. */
const FAN_OUT = 50;
/** Patch ID: the final search attributes include the page count (for `crawler list`). */
export const FINAL_PAGES_PATCH = 'campaign-final-pages-attribute';
/**
 * Patch ID: while it runs, the campaign publishes its page and error totals
 * (search attributes) every PUBLISH_EVERY_MS, and its memo follows what
 * operators steer. Runs recorded before it keep the old command sequence.
 */
export const LIVE_TOTALS_PATCH = 'campaign-live-totals';
/** Often enough for a list sorted by pages; a timer a minute costs two events a minute. */
const PUBLISH_EVERY_MS = 60_000;
/**
 * Patch ID: on the same minute timer, the campaign looks for domain
 * workflows that ended without reporting (terminated by an operator,
 * failed) and gives their hosts up, so they neither hold a concurrency slot
 * nor keep the campaign from completing.
 */
export const DOMAIN_WATCH_PATCH = 'campaign-domain-watch';

export async function crawlCampaign(input: CrawlCampaignInput): Promise<CampaignResult> {
  const info = workflowInfo();
  let settings: CampaignSettings;
  try {
    settings = resolveCampaignSettings(input, info.workflowId);
  } catch (err) {
    if (err instanceof CampaignInputError) throw ApplicationFailure.nonRetryable(err.message, 'InvalidCampaignInput', err.problems);
    throw err;
  }
  const { campaignId } = settings;
  const carry: CampaignCarry = input.carry ?? {
    // Redis keys are namespaced by the first run, so re-using a campaign ID
    // after it finished starts from an empty seen-set.
    campaignKey: `${campaignId}.${info.firstExecutionRunId.slice(0, 8)}`,
    configVersion: 1,
    startedAt: Date.now(),
    hosts: {},
    pending: [],
    paused: false,
    problems: [],
  };
  const steer: CampaignSteeringCarry = (carry.steering ??= {
    minDelayMs: null,
    hostDelays: {},
    pausedHosts: [],
    budgets: { maxPages: settings.budgets.maxPages, maxDepth: settings.budgets.maxDepth },
  });
  // `undefined`, not null: an operator's explicit "unlimited" must survive continue-as-new.
  if (steer.maxActiveHosts === undefined) steer.maxActiveHosts = settings.politeness.maxActiveHosts ?? null;
  const pending = new Set<string>(carry.pending);
  // Patches decided once per run, before any handler is registered: updates
  // and signals that arrive with the first workflow task run their handlers
  // inside setHandler, and some of those read these.
  // Domain reports alone grow the history (thousands of hosts report without
  // queueing anything), so a full history must wake the loop by itself.
  const canOnReports = patched(CAN_ON_REPORTS_PATCH);
  const liveTotals = patched(LIVE_TOTALS_PATCH);
  const domainWatch = liveTotals && patched(DOMAIN_WATCH_PATCH);
  let status: CampaignRunStatus = input.carry ? 'running' : 'starting';
  let stopReason: 'budget' | 'cancelled' | null = null;
  let inflight = 0;
  /** Set once the campaign has decided to end: every report then counts. */
  let finishing = false;

  const entry = (host: string): HostEntry =>
    (carry.hosts[host] ??= { state: 'closed', seq: 0, dirty: false, stats: emptyStats(), domainState: 'starting' });

  const noteNewUrls = (hosts: string[]) => {
    for (const host of hosts) {
      const e = entry(host);
      if (e.state === 'running') e.dirty = true;
      else if (e.state !== 'done') pending.add(host);
    }
  };
  setHandler(urlsDiscoveredSignal, ({ hosts }) => noteNewUrls(hosts));
  setHandler(domainReportSignal, (r) => {
    const e = entry(r.host);
    e.stats = r.stats;
    e.domainState = r.state;
    if (r.frontier !== undefined) e.frontier = r.frontier;
    if (r.kind === 'budget-exhausted') {
      e.state = 'done';
      stopReason ??= 'budget';
      return;
    }
    if (r.kind === 'progress') return;
    // A report that predates our latest wake is stale: that wake is still on its way.
    if (r.seq < e.seq && !finishing) return;
    if (e.dirty && !finishing) {
      e.dirty = false;
      // An idle domain waits for a wake: mark it idle so dispatchPending
      // sends one (before this patch it stayed "running" and got none until
      // it closed after idleCloseMs).
      if (r.kind === 'closed') e.state = 'closed';
      else if (patched(DIRTY_IDLE_WAKE_PATCH)) e.state = 'idle';
      pending.add(r.host);
      return;
    }
    e.state = r.kind === 'idle' ? 'idle' : 'closed';
  });
  const pauseCampaign = () => {
    if (!carry.paused) {
      carry.paused = true;
      void broadcast('pause');
    }
  };
  const resumeCampaign = () => {
    if (carry.paused) {
      carry.paused = false;
      void broadcast('resume');
    }
  };
  setHandler(pauseSignal, pauseCampaign);
  setHandler(resumeSignal, resumeCampaign);
  setHandler(cancelSignal, () => {
    stopReason ??= 'cancelled';
  });
  setHandler(campaignStatusQuery, () => ({
    campaignId,
    status,
    paused: carry.paused,
    startedAt: new Date(carry.startedAt).toISOString(),
    hosts: Object.entries(carry.hosts).map(([host, e]) => ({ host, state: e.state, domainState: e.domainState, stats: e.stats, frontier: e.frontier ?? null })),
    totals: totals(),
    steering: {
      configVersion: carry.configVersion,
      minDelayMs: steer.minDelayMs ?? settings.politeness.minDelayMs,
      hostDelays: steer.hostDelays,
      pausedHosts: steer.pausedHosts,
      budgets: steer.budgets,
      maxActiveHosts: steer.maxActiveHosts ?? null,
    },
  }));

  // ---- Operator steering: validated updates; a rejected one changes nothing. ----

  const steeringActs = proxyActivities<CrawlerActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: 1_000, maximumInterval: 30_000, maximumAttempts: 5, nonRetryableErrorTypes: ['InvalidCampaignInput'] },
  });
  const knownHosts = () => new Set([...Object.keys(carry.hosts), ...pending]);
  const isLive = (e: HostEntry | undefined) => e !== undefined && (e.state === 'running' || e.state === 'idle');
  const liveHosts = () => Object.entries(carry.hosts).filter(([, e]) => isLive(e));
  const hostPaused = (host: string) => steer.pausedHosts.includes(host);
  const assertOpen = () => {
    if (finishing || stopReason !== null) throw new SteeringError(`campaign ${campaignId} is finishing; nothing can be changed any more`);
  };
  /** The politeness a host's domain gets: its own override, else the campaign's, else the input's. */
  const politenessFor = (host: string): { politeness: CampaignSettings['politeness']; note?: string } => {
    const own = steer.hostDelays[host];
    const ms = own ?? steer.minDelayMs;
    if (ms === undefined || ms === null) return { politeness: settings.politeness };
    return { politeness: { ...settings.politeness, minDelayMs: ms }, note: operatorDelayReason(ms, own !== undefined) };
  };
  /** The memo shows the settings in force, the operator's changes included. */
  const publishSteering = () => {
    if (!liveTotals) return;
    upsertMemo({
      budgets: steer.budgets,
      politeness: { ...settings.politeness, minDelayMs: steer.minDelayMs ?? settings.politeness.minDelayMs, maxActiveHosts: steer.maxActiveHosts ?? null },
      hostDelays: steer.hostDelays,
      pausedHosts: steer.pausedHosts,
      maxActiveHosts: steer.maxActiveHosts ?? null,
    });
  };
  const signalPoliteness = async (host: string) => {
    const p = politenessFor(host);
    await getExternalWorkflowHandle(domainWorkflowId(campaignId, host))
      .signal(politenessSignal, { minDelayMs: p.politeness.minDelayMs, reason: p.note ?? `minimum delay ${p.politeness.minDelayMs} ms` })
      // A domain that closed meanwhile gets the new value when it is started again.
      .catch(() => undefined);
  };
  let settingsBusy = false;

  setHandler(
    setPolitenessUpdate,
    async (req) => {
      const { host, minDelayMs } = validateSetPoliteness(req, knownHosts());
      if (host === null) {
        steer.minDelayMs = minDelayMs;
        await inBatches(
          liveHosts().filter(([h]) => steer.hostDelays[h] === undefined),
          ([h]) => signalPoliteness(h),
        );
      } else {
        steer.hostDelays[host] = minDelayMs;
        if (isLive(carry.hosts[host])) await signalPoliteness(host);
      }
      publishSteering();
      return { host, minDelayMs };
    },
    {
      validator: (req) => {
        assertOpen();
        validateSetPoliteness(req, knownHosts());
      },
    },
  );

  // Takes effect at the next dispatch: hosts already crawling are not stopped
  // when the limit goes down; new ones wait until fewer are active.
  setHandler(
    setConcurrencyUpdate,
    (req) => {
      const { maxActiveHosts } = validateSetConcurrency(req);
      steer.maxActiveHosts = maxActiveHosts;
      publishSteering();
      return { maxActiveHosts };
    },
    {
      validator: (req) => {
        assertOpen();
        validateSetConcurrency(req);
      },
    },
  );

  setHandler(
    setBudgetsUpdate,
    async (req) => {
      const patch = validateSetBudgets(req);
      // One settings write at a time, and only once prepareCampaign has stored the first version.
      await condition(() => !settingsBusy && status !== 'starting');
      settingsBusy = true;
      try {
        const fromUnlimited = patch.maxPages !== undefined && patch.maxPages !== null && steer.budgets.maxPages === null;
        const r = await steeringActs.updateCampaignSettings({
          campaignKey: carry.campaignKey,
          version: carry.configVersion + 1,
          budgets: patch,
          hosts: fromUnlimited ? Object.keys(carry.hosts) : undefined,
        });
        carry.configVersion = Math.max(carry.configVersion, r.configVersion);
        steer.budgets = r.budgets;
        publishSteering();
        const configVersion = carry.configVersion;
        // Live domains ask for the new version on their next step; later ones start with it.
        await inBatches(liveHosts(), async ([h]) => {
          await getExternalWorkflowHandle(domainWorkflowId(campaignId, h))
            .signal(configSignal, { configVersion })
            .catch(() => undefined);
        });
        return { configVersion, budgets: steer.budgets };
      } finally {
        settingsBusy = false;
      }
    },
    {
      validator: (req) => {
        assertOpen();
        validateSetBudgets(req);
      },
    },
  );

  setHandler(
    addSeedsUpdate,
    async (req) => {
      const { seeds } = validateAddSeeds(req);
      // Counts as work in flight: the campaign must not call itself done while seeds are on their way.
      inflight++;
      try {
        await condition(() => status !== 'starting');
        const r = await steeringActs.addCampaignSeeds({ campaignKey: carry.campaignKey, configVersion: carry.configVersion, seeds });
        if (!finishing && stopReason === null) noteNewUrls(r.hosts);
        return { accepted: r.accepted, rejected: r.rejected };
      } finally {
        inflight--;
      }
    },
    {
      validator: (req) => {
        assertOpen();
        validateAddSeeds(req);
      },
    },
  );

  setHandler(
    pauseHostUpdate,
    async (req) => {
      const host = validateHostRequest(req, knownHosts());
      if (!hostPaused(host)) {
        steer.pausedHosts.push(host);
        // Under a campaign-wide pause the domain is paused already; resume will skip it.
        if (!carry.paused && isLive(carry.hosts[host])) {
          await getExternalWorkflowHandle(domainWorkflowId(campaignId, host)).signal(pauseSignal).catch(() => undefined);
        }
        publishSteering();
      }
      return { host, paused: true };
    },
    {
      validator: (req) => {
        assertOpen();
        validateHostRequest(req, knownHosts());
      },
    },
  );

  setHandler(
    resumeHostUpdate,
    async (req) => {
      const host = validateHostRequest(req, knownHosts());
      if (hostPaused(host)) {
        steer.pausedHosts = steer.pausedHosts.filter((h) => h !== host);
        if (!carry.paused && isLive(carry.hosts[host])) {
          await getExternalWorkflowHandle(domainWorkflowId(campaignId, host)).signal(resumeSignal).catch(() => undefined);
        }
        publishSteering();
      }
      // Still paused if the whole campaign is.
      return { host, paused: carry.paused };
    },
    {
      validator: (req) => {
        assertOpen();
        validateHostRequest(req, knownHosts());
      },
    },
  );

  setHandler(pauseCampaignUpdate, () => {
    pauseCampaign();
    return { paused: carry.paused };
  }, { validator: assertOpen });
  setHandler(resumeCampaignUpdate, () => {
    resumeCampaign();
    return { paused: carry.paused };
  }, { validator: assertOpen });

  function totals() {
    const t = { ...emptyStats(), hosts: 0, activeHosts: 0, frontier: 0 };
    for (const e of Object.values(carry.hosts)) {
      t.hosts++;
      t.frontier += e.state === 'done' || e.state === 'closed' ? 0 : (e.frontier ?? 0);
      if (e.state === 'running') t.activeHosts++;
      t.fetched += e.stats.fetched;
      t.failed += e.stats.failed;
      t.skipped += e.stats.skipped;
      t.bytes += e.stats.bytes;
    }
    return t;
  }

  async function inBatches<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
    inflight++;
    try {
      for (let i = 0; i < items.length; i += FAN_OUT) await Promise.all(items.slice(i, i + FAN_OUT).map(fn));
    } finally {
      inflight--;
    }
  }

  async function broadcast(what: 'pause' | 'resume'): Promise<void> {
    // A host an operator paused on its own stays paused when the campaign resumes.
    const live = Object.entries(carry.hosts).filter(([host, e]) => (e.state === 'running' || e.state === 'idle') && (what === 'pause' || !hostPaused(host)));
    await inBatches(live, async ([host]) => {
      const h = getExternalWorkflowHandle(domainWorkflowId(campaignId, host));
      await h.signal(what === 'pause' ? pauseSignal : resumeSignal).catch(() => undefined);
    });
  }

  const domainInput = (host: string, e: HostEntry): DomainCrawlInput => {
    const p = politenessFor(host);
    return {
      campaignId,
      campaignKey: carry.campaignKey,
      campaignWorkflowId: info.workflowId,
      host,
      configVersion: carry.configVersion,
      politeness: p.politeness,
      ...(p.note === undefined ? {} : { politenessNote: p.note }),
      fetchTotalTimeoutMs: settings.fetch.totalTimeoutMs,
      idleCloseMs: settings.idleCloseMs,
      paused: carry.paused || hostPaused(host),
      carry: { stats: e.stats, seq: e.seq, lastUrl: null, lastStatus: null },
    };
  };

  /**
   * Gets new URLs looked at: a running or idle domain is woken by signal, a
   * closed one is started again. Closing races both (a domain may close
   * between our start attempt and our signal), so alternate a few times.
   */
  async function wakeOrStart(host: string, e: HostEntry, preferSignal: boolean): Promise<void> {
    let signal = preferSignal;
    for (let attempt = 0; ; attempt++) {
      // Given up meanwhile (its workflow ended unreported): never started again.
      if (domainWatch && e.state === 'done') return;
      try {
        if (signal) {
          e.seq++;
          await getExternalWorkflowHandle(domainWorkflowId(campaignId, host)).signal(wakeSignal, { seq: e.seq });
        } else {
          await startChild(domainCrawl, {
            workflowId: domainWorkflowId(campaignId, host),
            args: [domainInput(host, e)],
            // Children outlive a continue-as-new of the campaign; they report back by workflow ID.
            parentClosePolicy: ParentClosePolicy.ABANDON,
            workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
            typedSearchAttributes: [
              { key: CrawlCampaign, value: campaignId },
              { key: CrawlHost, value: host },
              { key: CrawlState, value: 'starting' },
            ],
            memo: { campaign: campaignId, host },
          });
        }
        return;
      } catch (err) {
        if (attempt >= 5) throw err;
        log.info('domain wake/start raced its close, trying the other way', { host, error: String(err) });
        signal = !signal;
      }
    }
  }

  // Concurrency: a host needs a slot to be started or woken; one that is
  // already crawling (it only gets marked dirty) or done does not.
  // A host an operator paused on its own gives its slot up (resuming it may
  // briefly exceed the cap). Under a campaign-wide pause the hosts keep their
  // slots, so no new host starts while nothing may crawl.
  const activeHosts = () => Object.entries(carry.hosts).filter(([h, e]) => e.state === 'running' && !hostPaused(h)).length;
  const needsSlot = (host: string) => carry.hosts[host]?.state !== 'running' && carry.hosts[host]?.state !== 'done';
  const freeSlots = () => (steer.maxActiveHosts === null || steer.maxActiveHosts === undefined ? Infinity : steer.maxActiveHosts - activeHosts());
  /** Something in `pending` can be dispatched now (always, without a concurrency limit). */
  const dispatchable = () => pending.size > 0 && (freeSlots() > 0 || [...pending].some((h) => !needsSlot(h)));

  async function dispatchPending(): Promise<void> {
    const all = [...pending];
    pending.clear();
    // Thousands of starts fill the history: dispatch one batch per loop turn,
    // so the loop can continue as new between batches. Hosts beyond the
    // batch, and hosts that need a slot when none is free, wait in `pending`
    // in their order; a host that needs no slot is never stuck behind them.
    const batch = canOnReports ? FAN_OUT : Infinity;
    let free = freeSlots();
    const hosts: string[] = [];
    for (const h of all) {
      if (hosts.length < batch && (!needsSlot(h) || free-- > 0)) hosts.push(h);
      else pending.add(h);
    }
    await inBatches(hosts, async (host) => {
      const e = entry(host);
      if (e.state === 'done' || stopReason !== null) return;
      if (e.state === 'running') {
        e.dirty = true;
        return;
      }
      const wasIdle = e.state === 'idle';
      e.state = 'running';
      e.dirty = false;
      await wakeOrStart(host, e, wasIdle);
    });
  }

  const watchActs = proxyActivities<CrawlerActivities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 3 } });
  /** Hosts whose domain workflow ended without its closing report: done, with the reason among the problems. */
  /** Domains that closed before this were looked at already (less a margin for visibility's lag). */
  let watchedSince = carry.startedAt;
  async function giveUpClosedDomains(): Promise<void> {
    if (!Object.values(carry.hosts).some(isLive)) return;
    const checkedAt = Date.now();
    let closed: { host: string; status: string }[];
    try {
      closed = await watchActs.findClosedDomains({ campaignId, since: new Date(watchedSince).toISOString() });
      watchedSince = Math.max(carry.startedAt, checkedAt - 5 * 60_000);
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Only a check: the next minute tries again.
      log.warn('could not look for closed domain workflows', { error: String(err) });
      return;
    }
    for (const { host, status: how } of closed) {
      const e = carry.hosts[host];
      if (!e || !isLive(e)) continue;
      e.state = 'done';
      e.dirty = false;
      pending.delete(host);
      carry.problems.push(`domain workflow ${domainWorkflowId(campaignId, host)} ended ${how} without reporting: ${host} is not crawled further`);
    }
  }

  const quiet = () => pending.size === 0 && inflight === 0 && Object.values(carry.hosts).every((e) => e.state !== 'running');
  const historyFull = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS;
  let published = { fetched: -1, failed: -1 };
  const publishTotals = () => {
    const t = totals();
    if (t.fetched === published.fetched && t.failed === published.failed) return;
    published = { fetched: t.fetched, failed: t.failed };
    upsertSearchAttributes([
      { key: CrawlPages, value: t.fetched },
      { key: CrawlErrors, value: t.failed },
    ]);
  };

  try {
    if (!input.carry) {
      upsertSearchAttributes([
        { key: CrawlCampaign, value: campaignId },
        { key: CrawlState, value: 'running' },
      ]);
      upsertMemo({ seeds: settings.seeds.slice(0, 20), scope: settings.scope, budgets: settings.budgets, politeness: settings.politeness, output: settings.output });
      const prep = await proxyActivities<CrawlerActivities>({
        startToCloseTimeout: '2 minutes',
        retry: { initialInterval: 1_000, maximumInterval: 30_000, nonRetryableErrorTypes: ['InvalidCampaignInput'] },
      }).prepareCampaign({ settings, campaignKey: carry.campaignKey });
      carry.configVersion = prep.configVersion;
      for (const r of prep.rejectedSeeds) carry.problems.push(`seed ${r.seed}: ${r.reason}`);
      if (prep.hosts.length === 0) {
        throw ApplicationFailure.nonRetryable(`no usable seed: ${carry.problems.join('; ')}`, 'InvalidCampaignInput');
      }
      for (const host of prep.hosts) pending.add(host);
    }
    status = 'running';

    if (liveTotals) {
      // Its own timer loop: a timeout on the dispatch loop's condition would
      // start and cancel a timer on every dispatch.
      void (async () => {
        try {
          while (!finishing) {
            await sleep(PUBLISH_EVERY_MS);
            if (!finishing) publishTotals();
            if (domainWatch && !finishing) await giveUpClosedDomains();
          }
        } catch (err) {
          // A cancelled campaign cancels this timer too; the loop just ends.
          if (!isCancellation(err)) throw err;
        }
      })();
    }
    for (;;) {
      await condition(() => dispatchable() || stopReason !== null || quiet() || (canOnReports && inflight === 0 && historyFull()));
      if (stopReason !== null) break;
      if (inflight === 0 && historyFull()) {
        await allHandlersFinished();
        return await continueAsNew<typeof crawlCampaign>({ ...input, carry: { ...carry, pending: [...pending] } });
      }
      if (dispatchable()) {
        await dispatchPending();
        continue;
      }
      if (quiet()) break;
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    stopReason = 'cancelled';
  }

  // Handlers change stopReason behind the compiler's back.
  const reason = stopReason as 'budget' | 'cancelled' | null;
  status = reason === 'budget' ? 'budget-exhausted' : reason === 'cancelled' ? 'cancelled' : 'completed';
  finishing = true;
  await CancellationScope.nonCancellable(async () => {
    const open = Object.entries(carry.hosts).filter(([, e]) => e.state === 'running' || e.state === 'idle');
    await inBatches(open, async ([host]) => {
      await getExternalWorkflowHandle(domainWorkflowId(campaignId, host))
        .signal(finishSignal, { reason: reason ?? 'drained' })
        .catch(() => undefined);
    });
    // Wait (bounded) for every domain to finish its current step, send its
    // final numbers and close, so the summary is exact and no domain
    // workflow is left waiting for workers that are about to stop.
    const allClosed = () => Object.values(carry.hosts).every((e) => e.state === 'closed' || e.state === 'done');
    if (domainWatch) {
      // A domain that ended unreported would hold this wait for its whole length.
      if (!(await condition(allClosed, '30 seconds'))) {
        await giveUpClosedDomains();
        await condition(allClosed, '90 seconds');
      }
    } else {
      await condition(allClosed, '2 minutes');
    }
    // Histories recorded before the page count was published replay the old command.
    if (patched(FINAL_PAGES_PATCH)) {
      upsertSearchAttributes([
        { key: CrawlState, value: status },
        { key: CrawlPages, value: totals().fetched },
        ...(liveTotals ? [{ key: CrawlErrors, value: totals().failed }] : []),
      ]);
    } else {
      upsertSearchAttributes([{ key: CrawlState, value: status }]);
    }
  });
  await allHandlersFinished();
  const t = totals();
  const finishedAt = Date.now();
  log.info('campaign finished', { campaignId, status, pages: t.fetched });
  return {
    campaignId,
    status,
    startedAt: new Date(carry.startedAt).toISOString(),
    finishedAt: new Date(finishedAt).toISOString(),
    durationMs: finishedAt - carry.startedAt,
    hosts: t.hosts,
    pages: t.fetched,
    failed: t.failed,
    skipped: t.skipped,
    bytes: t.bytes,
    outputDir: settings.output.dir,
    problems: carry.problems,
  };
}
