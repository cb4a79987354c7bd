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
  proxyActivities,
  setHandler,
  startChild,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { CrawlerActivities } from '../activities/types';
import { CampaignInputError, resolveCampaignSettings, type CampaignInput, type CampaignSettings } from '../src/config/campaign';
import { CrawlCampaign, CrawlHost, CrawlState } from '../src/temporal/search-attributes';
import { domainCrawl, type DomainCrawlInput } from './domain-crawl';
import { domainWorkflowId } from './ids';
import {
  campaignStatusQuery,
  cancelSignal,
  domainReportSignal,
  emptyStats,
  finishSignal,
  pauseSignal,
  resumeSignal,
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
}

export interface CampaignCarry {
  campaignKey: string;
  configVersion: number;
  startedAt: number;
  hosts: Record<string, HostEntry>;
  pending: string[];
  paused: boolean;
  problems: string[];
}

export type CrawlCampaignInput = CampaignInput & { carry?: CampaignCarry };

const MAX_HISTORY_EVENTS = 8000;
/** How many children are started or signalled concurrently. */
const FAN_OUT = 50;

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
  const pending = new Set<string>(carry.pending);
  let status: CampaignRunStatus = input.carry ? 'running' : 'starting';
  let stopReason: 'budget' | 'cancelled' | null = null;
  let inflight = 0;
  /** Set once the campaign has decided to end: every report then counts. */
  let finishing = false;

  const entry = (host: string): HostEntry =>
    (carry.hosts[host] ??= { state: 'closed', seq: 0, dirty: false, stats: emptyStats(), domainState: 'starting' });

  setHandler(urlsDiscoveredSignal, ({ hosts }) => {
    for (const host of hosts) {
      const e = entry(host);
      if (e.state === 'running') e.dirty = true;
      else if (e.state !== 'done') pending.add(host);
    }
  });
  setHandler(domainReportSignal, (r) => {
    const e = entry(r.host);
    e.stats = r.stats;
    e.domainState = r.state;
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
      if (r.kind === 'closed') e.state = 'closed';
      pending.add(r.host);
      return;
    }
    e.state = r.kind === 'idle' ? 'idle' : 'closed';
  });
  setHandler(pauseSignal, () => {
    if (!carry.paused) {
      carry.paused = true;
      void broadcast('pause');
    }
  });
  setHandler(resumeSignal, () => {
    if (carry.paused) {
      carry.paused = false;
      void broadcast('resume');
    }
  });
  setHandler(cancelSignal, () => {
    stopReason ??= 'cancelled';
  });
  setHandler(campaignStatusQuery, () => ({
    campaignId,
    status,
    paused: carry.paused,
    startedAt: new Date(carry.startedAt).toISOString(),
    hosts: Object.entries(carry.hosts).map(([host, e]) => ({ host, state: e.state, domainState: e.domainState, stats: e.stats })),
    totals: totals(),
  }));

  function totals() {
    const t = { ...emptyStats(), hosts: 0, activeHosts: 0 };
    for (const e of Object.values(carry.hosts)) {
      t.hosts++;
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
    const live = Object.entries(carry.hosts).filter(([, e]) => e.state === 'running' || e.state === 'idle');
    await inBatches(live, async ([host]) => {
      const h = getExternalWorkflowHandle(domainWorkflowId(campaignId, host));
      await h.signal(what === 'pause' ? pauseSignal : resumeSignal).catch(() => undefined);
    });
  }

  const domainInput = (host: string, e: HostEntry): DomainCrawlInput => ({
    campaignId,
    campaignKey: carry.campaignKey,
    campaignWorkflowId: info.workflowId,
    host,
    configVersion: carry.configVersion,
    politeness: settings.politeness,
    fetchTotalTimeoutMs: settings.fetch.totalTimeoutMs,
    idleCloseMs: settings.idleCloseMs,
    paused: carry.paused,
    carry: { stats: e.stats, seq: e.seq, lastUrl: null, lastStatus: null },
  });

  /**
   * Gets new URLs looked at: a running or idle domain is woken by signal, a
   * closed one is started again. Closing races both (a domain may close
   * between our start attempt and our signal), so alternate a few times.
   */
  async function wakeOrStart(host: string, e: HostEntry, preferSignal: boolean): Promise<void> {
    let signal = preferSignal;
    for (let attempt = 0; ; attempt++) {
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

  async function dispatchPending(): Promise<void> {
    const hosts = [...pending];
    pending.clear();
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

  const quiet = () => pending.size === 0 && inflight === 0 && Object.values(carry.hosts).every((e) => e.state !== 'running');

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

    for (;;) {
      await condition(() => pending.size > 0 || stopReason !== null || quiet());
      if (stopReason !== null) break;
      if (inflight === 0 && (workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > MAX_HISTORY_EVENTS)) {
        await allHandlersFinished();
        return await continueAsNew<typeof crawlCampaign>({ ...input, carry: { ...carry, pending: [...pending] } });
      }
      if (pending.size > 0) {
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
    await condition(() => Object.values(carry.hosts).every((e) => e.state === 'closed' || e.state === 'done'), '2 minutes');
    upsertSearchAttributes([{ key: CrawlState, value: status }]);
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
