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
  /** For `unavailable`: the typed cause, e.g. HTTP_503, DNS_FAILURE, CONNECTION_REFUSED. */
  code?: string;
  fetched: boolean;
}

export interface CrawlStepInput extends DomainRef {
  /** Where to signal hosts that received new URLs. */
  campaignWorkflowId: string;
  /** The host's current pause between requests; the activity stamps it on the shared host clock. */
  delayMs: number;
  /** Robots unreachable for good: record URLs instead of fetching. */
  robotsUnavailable?: boolean;
  /** Why (absent from workflows started before it was passed): the code their index lines carry. */
  robotsCause?: { code: string; detail: string };
  /** How long the domain slept since its previous step, for the politeness-wait metric. */
  sleptMs?: number;
  /**
   * The URL the previous step asked to retry and how many attempts it has
   * had; the step counts this attempt only if it claims that same URL.
   */
  retry?: { url: string; attempts: number };
  /**
   * Unique per step of a domain run (`<runId>/<n>`), the same on every
   * attempt and on replay: the key that makes the step idempotent once it
   * has committed. Absent only from remote steps scheduled by older code
   * (replayed local steps get one).
   */
  stepId?: string;
}

export type CrawlStepResult =
  | { kind: 'empty' }
  | { kind: 'wait'; waitMs: number; reason: string }
  | { kind: 'budget-exhausted'; url: string }
  /**
   * A transient failure (5xx, 429, network): the URL stays claimed and the
   * workflow sleeps waitMs (≥ crawl-delay, ≥ Retry-After) before the next
   * attempt, so a host that asks us to back off sees nothing meanwhile.
   */
  | { kind: 'retry'; url: string; waitMs: number; reason: string; status: number | null; code: string }
  | DoneResult;

/** A step that finished its URL (whatever the outcome) and committed it. */
export interface DoneResult {
  kind: 'done';
  url: string;
  /** The index outcome: 'fetched', 'duplicate', 'redirect', 'sitemap', 'error', 'refused', 'robots-disallowed', … */
  outcome: string;
  /** How the step counts in the host's stats (and the workflow's): a page fetched, a URL failed, or neither. */
  counted?: 'fetched' | 'failed' | 'skipped';
  status: number | null;
  bytes: number;
  /** Whether a request was sent to the host, so the workflow knows to pause. */
  requested: boolean;
  remaining: number;
  discoveredHosts: number;
}

export interface FindClosedDomainsInput {
  campaignId: string;
  /**
   * Only runs that closed since (ISO 8601): the campaign's start at first
   * (runs of an earlier campaign with the same ID are not its concern), then
   * its previous check, so hosts given up are not listed again every minute.
   */
  since?: string;
}

/** A domain workflow whose latest run ended other than by completing (its host gets no closing report). */
export interface ClosedDomain {
  host: string;
  /** TERMINATED, FAILED, TIMED_OUT or CANCELLED. */
  status: string;
}

/** The activity surface the workflows call (implemented by createActivities). */
export interface CrawlerActivities {
  prepareCampaign(input: PrepareCampaignInput & { campaignKey: string }): Promise<PrepareCampaignResult>;
  loadRobots(input: DomainRef): Promise<LoadRobotsResult>;
  crawlStep(input: CrawlStepInput): Promise<CrawlStepResult>;
  findClosedDomains(input: FindClosedDomainsInput): Promise<ClosedDomain[]>;
}

// ---- Operator steering (activities/update-campaign.ts) ----

export interface UpdateCampaignSettingsInput {
  campaignKey: string;
  /** The version to save the settings as: the campaign's current one + 1, so a retried attempt is recognised. */
  version: number;
  /** Budget changes; a field left out is unchanged, null = unlimited. */
  budgets: { maxPages?: number | null; maxDepth?: number | null };
  /**
   * The campaign's hosts, sent only when maxPages goes from unlimited to a
   * number: pages fetched while unlimited hold no budget slot, so their
   * per-host counts are added to the budget first.
   */
  hosts?: string[];
}

export interface UpdateCampaignSettingsResult {
  configVersion: number;
  budgets: { maxPages: number | null; maxDepth: number | null };
}

export interface AddCampaignSeedsInput extends Omit<DomainRef, 'host'> {
  seeds: string[];
}

export interface AddCampaignSeedsResult {
  accepted: string[];
  rejected: { seed: string; reason: string }[];
  /** Hosts that got new URLs: the campaign wakes or starts them. */
  hosts: string[];
}

// Declaration merging keeps this section self-contained.
export interface CrawlerActivities {
  updateCampaignSettings(input: UpdateCampaignSettingsInput): Promise<UpdateCampaignSettingsResult>;
  addCampaignSeeds(input: AddCampaignSeedsInput): Promise<AddCampaignSeedsResult>;
}
