// Every signal, query and update of the crawler, defined once and shared by
// workflows, activities and clients. Payloads are plain JSON.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
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
} from '../src/config/steering';

export type DomainState = 'starting' | 'robots' | 'crawling' | 'sleeping' | 'backing-off' | 'paused' | 'idle' | 'done';

export interface HostStats {
  /** Pages fetched with a 2xx or 3xx response (redirects and duplicates included). */
  fetched: number;
  /** URLs that ended in an error outcome: a final 4xx/5xx, network errors, timeouts, refused addresses… */
  failed: number;
  /** URLs not requested on purpose (robots.txt, budget). */
  skipped: number;
  bytes: number;
}

export const emptyStats = (): HostStats => ({ fetched: 0, failed: 0, skipped: 0, bytes: 0 });

/** Sent by a domain workflow to its campaign. */
export interface DomainReport {
  host: string;
  kind: 'progress' | 'idle' | 'closed' | 'budget-exhausted';
  /** The last wake sequence number the domain had seen when it reported. */
  seq: number;
  stats: HostStats;
  state: DomainState;
  /** URLs waiting in the host's frontier at its last step (absent from older domain runs). */
  frontier?: number | null;
}

// Campaign ← activities: these hosts got new URLs in their frontier.
export const urlsDiscoveredSignal = defineSignal<[{ hosts: string[] }]>('urlsDiscovered');
// Campaign ← domain workflows.
export const domainReportSignal = defineSignal<[DomainReport]>('domainReport');

// Campaign and domain workflows both understand these.
export const pauseSignal = defineSignal<[]>('pause');
export const resumeSignal = defineSignal<[]>('resume');
export const cancelSignal = defineSignal<[{ reason?: string }?]>('cancel');

// Domain ← campaign.
export const wakeSignal = defineSignal<[{ seq: number }]>('wake');
export const finishSignal = defineSignal<[{ reason: 'drained' | 'budget' | 'cancelled' }]>('finish');
/** The operator changed this host's minimum delay; applies from the domain's next sleep. */
export const politenessSignal = defineSignal<[{ minDelayMs: number; reason: string }]>('politeness');
/** Settings in Redis changed: the domain's next activity asks for at least this version. */
export const configSignal = defineSignal<[{ configVersion: number }]>('configChanged');

// Operator steering of a running campaign (validated: a rejected update changes nothing).
export const setPolitenessUpdate = defineUpdate<SetPolitenessResult, [SetPolitenessRequest]>('setPoliteness');
export const setBudgetsUpdate = defineUpdate<SetBudgetsResult, [SetBudgetsRequest]>('setBudgets');
export const setConcurrencyUpdate = defineUpdate<SetConcurrencyResult, [SetConcurrencyRequest]>('setConcurrency');
export const addSeedsUpdate = defineUpdate<AddSeedsResult, [AddSeedsRequest]>('addSeeds');
export const pauseHostUpdate = defineUpdate<HostPauseResult, [HostRequest]>('pauseHost');
export const resumeHostUpdate = defineUpdate<HostPauseResult, [HostRequest]>('resumeHost');
/** Update forms of the pause/resume signals, for callers that want an acknowledgement. */
export const pauseCampaignUpdate = defineUpdate<{ paused: boolean }, []>('pauseCampaign');
export const resumeCampaignUpdate = defineUpdate<{ paused: boolean }, []>('resumeCampaign');

export interface HostStatus {
  host: string;
  state: 'running' | 'idle' | 'closed' | 'done';
  domainState: DomainState;
  stats: HostStats;
  /** URLs waiting in the host's frontier, as of its last report. */
  frontier?: number | null;
}

export interface CampaignStatus {
  campaignId: string;
  status: CampaignRunStatus;
  paused: boolean;
  startedAt: string;
  hosts: HostStatus[];
  totals: HostStats & { hosts: number; activeHosts: number; frontier?: number };
  /** What operators changed since the start (absent from campaigns started before steering existed). */
  steering?: CampaignSteering;
}

export interface CampaignSteering {
  /** Version of the settings in Redis the campaign hands to its domains. */
  configVersion: number;
  /** Campaign-wide minimum delay now in force (the input's, or the operator's). */
  minDelayMs: number;
  /** Per-host minimum delays set by an operator. */
  hostDelays: Record<string, number>;
  pausedHosts: string[];
  budgets: { maxPages: number | null; maxDepth: number | null };
  /** Most hosts crawled at once (null = unlimited); absent from campaigns started before it existed. */
  maxActiveHosts?: number | null;
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
  /** Minimum delay in force (the campaign's, or the operator's), before robots.txt. */
  minDelayMs?: number;
  configVersion?: number;
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
  bytes: number;
  outputDir: string;
  problems: string[];
}
