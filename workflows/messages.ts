// Every signal, query and update of the crawler, defined once and shared by
// workflows, activities and clients. Payloads are plain JSON.
import { defineQuery, defineSignal } from '@temporalio/workflow';

export type DomainState = 'starting' | 'robots' | 'crawling' | 'sleeping' | 'backing-off' | 'paused' | 'idle' | 'done';

export interface HostStats {
  /** Requests that got an HTTP response (any status). */
  fetched: number;
  /** URLs that ended in an error outcome (network, timeout, too large…). */
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

export interface HostStatus {
  host: string;
  state: 'running' | 'idle' | 'closed' | 'done';
  domainState: DomainState;
  stats: HostStats;
}

export interface CampaignStatus {
  campaignId: string;
  status: CampaignRunStatus;
  paused: boolean;
  startedAt: string;
  hosts: HostStatus[];
  totals: HostStats & { hosts: number; activeHosts: number };
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
