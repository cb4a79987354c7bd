// Every signal, query and update of the crawler, defined once and shared by
// workflows, activities and clients. Payloads are plain JSON.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { HostStats } from '../activities/types';
import type { HostRecord, RevisitView, SeenFilterTotals } from '../src/redis/campaign-hosts';
import type { RenderMode } from '../src/config/campaign';
import type {
  AddSeedsRequest,
  AddSeedsResult,
  HostPauseResult,
  HostRequest,
  SetBudgetsRequest,
  SetBudgetsResult,
  SetConcurrencyRequest,
  SetConcurrencyResult,
  SetPolitenessRequest,
  SetPolitenessResult,
  SetRenderRequest,
  SetRenderResult,
} from '../src/config/steering';

export type { HostStats } from '../activities/types';

/** What a host workflow is doing (its CrawlState search attribute shows the coarse part of it). */
export type DomainState = 'starting' | 'crawling' | 'sleeping' | 'backing-off' | 'paused' | 'done';

// Campaign ← sessions: something changed in Redis (hosts ready, a slot freed, a budget reached).
export const campaignNudgeSignal = defineSignal<[]>('nudge');

// The campaign understands these (the `temporal` CLI can send them too).
export const pauseSignal = defineSignal<[]>('pause');
export const resumeSignal = defineSignal<[]>('resume');
export const cancelSignal = defineSignal<[{ reason?: string }?]>('cancel');

// Host workflow ← campaign.
/** New URLs for the host: run another session; `gen` is the dispatch generation that holds its slot. */
export const wakeSignal = defineSignal<[{ gen: number }]>('wake');
export const finishSignal = defineSignal<[{ reason: 'drained' | 'budget' | 'cancelled' }]>('finish');
/** Settings (pause, delays, budgets) changed to this version: a host waiting on a pause looks again. */
export const steerSignal = defineSignal<[{ configVersion: number }]>('steer');

// Host workflow ← a live worker's liveness watch (activities/worker-liveness.ts).
/**
 * The worker running this run's regular session number `session` is dead (its lease in Redis ran
 * out): the run abandons that session and starts the next at once, on a live worker.
 */
export const sessionLostSignal = defineSignal<[{ session: number }]>('sessionLost');

/**
 * Types of the ApplicationFailures the crawler raises on purpose, shared like
 * the messages: workflows and activities raise them, retry policies and
 * clients recognise them. Both are non-retryable: trying again cannot help.
 */
export const FailureType = {
  /** The campaign's input, its scope or all of its seeds cannot describe a crawl. */
  invalidCampaignInput: 'InvalidCampaignInput',
  /** A steering request the campaign refuses (SteeringError's message); nothing changed. */
  steeringRefused: 'SteeringError',
  /** A session's Redis was unreachable and answers again: its next attempt starts at once (activities/redis-outage.ts). */
  redisOutage: 'RedisOutage',
} as const;

// Operator steering of a running campaign (validated: a rejected update changes nothing).
export const setPolitenessUpdate = defineUpdate<SetPolitenessResult, [SetPolitenessRequest]>('setPoliteness');
export const setBudgetsUpdate = defineUpdate<SetBudgetsResult, [SetBudgetsRequest]>('setBudgets');
export const setConcurrencyUpdate = defineUpdate<SetConcurrencyResult, [SetConcurrencyRequest]>('setConcurrency');
export const setRenderUpdate = defineUpdate<SetRenderResult, [SetRenderRequest]>('setRender');
export const addSeedsUpdate = defineUpdate<AddSeedsResult, [AddSeedsRequest]>('addSeeds');
export const pauseHostUpdate = defineUpdate<HostPauseResult, [HostRequest]>('pauseHost');
export const resumeHostUpdate = defineUpdate<HostPauseResult, [HostRequest]>('resumeHost');
/** Update forms of the pause/resume signals, for callers that want an acknowledgement. */
export const pauseCampaignUpdate = defineUpdate<{ paused: boolean }, []>('pauseCampaign');
export const resumeCampaignUpdate = defineUpdate<{ paused: boolean }, []>('resumeCampaign');

/** A host as `crawler status` lists it: its record in Redis, and an operator's render mode for it (`crawler set-render`). */
export type HostStatus = HostRecord & { host: string; render?: RenderMode };

export interface CampaignTotals extends HostStats {
  hosts: number;
  /** Hosts holding a slot now. */
  activeHosts: number;
  /** Hosts with URLs waiting for a slot. */
  readyHosts: number;
  frontier: number;
  /** A campaign whose seen sets are Bloom filters: their rate and the URLs they are expected to have skipped (src/redis/seen-bloom.ts). */
  seenFilter?: SeenFilterTotals;
}

export interface CampaignStatus {
  campaignId: string;
  /** Namespace of the campaign's Redis keys: where `crawler status` reads the per-host table. */
  campaignKey: string;
  status: CampaignRunStatus;
  paused: boolean;
  startedAt: string;
  /** As of `updatedAt` (the campaign's last look at Redis). */
  totals: CampaignTotals;
  updatedAt: string;
  problems: number;
  steering: CampaignSteering;
  /** A revisit campaign (continuous crawling): `crawler status` shows its revisit queue. */
  revisit?: boolean;
  /**
   * The last dispatch rounds failed (Redis or Temporal unreachable past their
   * retries): the campaign tries again every 10 s and shows why until one works.
   */
  dispatchError?: { message: string; at: string; failures: number };
}

export interface CampaignSteering {
  /** Version of the settings in Redis (every operator change makes a new one). */
  configVersion: number;
  /** Campaign-wide minimum delay now in force (the input's, or the operator's). */
  minDelayMs: number;
  budgets: { maxPages: number | null; maxDepth: number | null };
  /** Most hosts crawled at once (null = unlimited). */
  maxActiveHosts: number | null;
  /** Hosts paused or given a delay of their own (operators' changes; listed by `crawler status`). */
  pausedHosts: number;
}

export type CampaignRunStatus = 'starting' | 'running' | 'completed' | 'budget-exhausted' | 'cancelled' | 'failed';

export const campaignStatusQuery = defineQuery<CampaignStatus>('status');

export interface DomainStatus {
  campaignId: string;
  host: string;
  state: DomainState;
  paused: boolean;
  stats: HostStats;
  delayMs: number;
  delayReason: string;
  lastUrl: string | null;
  lastStatus: number | null;
  nextWakeAt: string | null;
  frontier: number | null;
  configVersion: number;
  /** Sessions run by this workflow run, and URLs they finished. */
  sessions: number;
  pages: number;
  /** Revisit campaigns: the host's revisit queue as its last session left it (next due, due within an hour / a day). */
  revisit?: RevisitView;
}

export const domainStatusQuery = defineQuery<DomainStatus>('domainStatus');

export interface CampaignResult {
  campaignId: string;
  status: CampaignRunStatus;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  hosts: number;
  pages: number;
  failed: number;
  skipped: number;
  /** Page requisites (stylesheets, scripts, images, fonts), counted apart from pages; absent from campaigns without any. */
  embeds?: { fetched: number; failed: number; skipped: number };
  bytes: number;
  outputDir: string;
  /** The sealed index (one line per URL, the committed one), null when it could not be written (a problem says why). */
  sealedIndex?: { file: string; lines: number; dropped: number; missing: number | null } | null;
  /** Responses stored as WARC revisit records (payload already stored) and the payload bytes they did not store again. */
  revisits?: { records: number; bytesSaved: number };
  /**
   * render: browser or auto (or any page rendered): the committed HTML pages,
   * those rendered in a browser, their share (0 to 1) and why each was
   * rendered (src/browser/adaptive.ts reasons; `browser` under render: browser).
   */
  rendered?: { pages: number; htmlPages: number; share: number; reasons: Record<string, number> };
  /** A campaign whose seen sets are Bloom filters (frontier.seen bloom): their rate and the URLs they are expected to have skipped. */
  seenFilter?: SeenFilterTotals;
  /** The first problems (rejected seeds, hosts given up…); `problemCount` counts them all. */
  problems: string[];
  problemCount: number;
}
