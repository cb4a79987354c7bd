// Inputs and results of the activities, shared with workflows as types only.
// Results are small summaries: page bodies never enter workflow history.
import type { CampaignSettings } from '../src/config/campaign';

export interface PrepareCampaignInput {
  settings: CampaignSettings;
}

export interface PrepareCampaignResult {
  /** Seeds grouped by politeness key (host), already in the frontier. */
  hosts: string[];
  /** Seeds that could not be used, with the reason. */
  rejectedSeeds: { seed: string; reason: string }[];
  configVersion: number;
}

export interface DomainRef {
  /** Namespace of the campaign's Redis keys. */
  campaignKey: string;
  host: string;
  /** Settings version the caller knows of; activities reload older cached settings. */
  configVersion: number;
}

export interface LoadRobotsResult {
  /** ok: rules known (possibly allow-all); unavailable: 5xx/429/network, try again later; wait: the host clock is busy. */
  kind: 'ok' | 'unavailable' | 'wait';
  crawlDelaySec: number | null;
  waitMs: number;
  detail: string;
  fetched: boolean;
}

export interface CrawlStepInput extends DomainRef {
  /** Where to signal hosts that received new URLs. */
  campaignWorkflowId: string;
  /** The host's current pause between requests; the activity stamps it on the shared host clock. */
  delayMs: number;
  /** Robots unreachable for good: record URLs instead of fetching. */
  robotsUnavailable?: boolean;
}

export type CrawlStepResult =
  | { kind: 'empty' }
  | { kind: 'wait'; waitMs: number; reason: string }
  | { kind: 'budget-exhausted'; url: string }
  | {
      kind: 'done';
      url: string;
      /** 'fetched' when a response was stored; otherwise why not. */
      outcome: string;
      status: number | null;
      bytes: number;
      /** Whether a request was sent to the host, so the workflow knows to pause. */
      requested: boolean;
      remaining: number;
      discoveredHosts: number;
    };

/** The activity surface the workflows call (implemented by createActivities). */
export interface CrawlerActivities {
  prepareCampaign(input: PrepareCampaignInput & { campaignKey: string }): Promise<PrepareCampaignResult>;
  loadRobots(input: DomainRef): Promise<LoadRobotsResult>;
  crawlStep(input: CrawlStepInput): Promise<CrawlStepResult>;
}
