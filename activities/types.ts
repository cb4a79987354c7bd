// Inputs and results of the activities, shared with workflows as types only.
// Results are small summaries: page bodies never enter workflow history.
import type { CampaignSettings, RenderMode } from '../src/config/campaign';
import type { RevisitView, SeenFilterTotals } from '../src/redis/campaign-hosts';
import type { CountedAs, HostStats } from '../src/stats/counters';
import type { IndexOutcome } from '../src/storage/index-writer';

export interface PrepareCampaignInput {
  settings: CampaignSettings;
  campaignKey: string;
}

export interface PrepareCampaignResult {
  /** Hosts whose seeds are in their frontiers (and marked ready). */
  hosts: number;
  /** Seeds that could not be used, with the reason (the first few; all of them are problems of the campaign). */
  rejectedSeeds: { seed: string; reason: string }[];
  configVersion: number;
}

/** Where a campaign's seed list is read to (src/seeds/seed-source.ts SeedPosition; plain JSON). */
export interface SeedListPosition {
  line: number;
  byte: number;
  seeds: number;
}

export interface LoadSeedsInput {
  campaignKey: string;
  from: SeedListPosition;
  /** Seeds read in this call at most (test-only: CampaignTestLimits.seedsPerCall); default SEED_BATCH × SEED_BATCHES_PER_CALL. */
  maxSeeds?: number;
}

export interface LoadSeedsResult {
  next: SeedListPosition;
  done: boolean;
  /** Hosts that got new seeds, seeds read and seeds rejected in this call. */
  hosts: number;
  seeds: number;
  rejected: number;
}

/** How a URL ended, as a session reports it and the index records it. */
export interface Outcome {
  url: string;
  /** The index outcome (a closed union: activities/pipeline/outcome.ts). */
  outcome: IndexOutcome;
  /** How it counts in the host's stats: a page fetched, a URL failed, or neither; embeds in their own classes. */
  counted: CountedAs;
  status: number | null;
  bytes: number;
}

/** A host's counters (declared with the others in src/stats/counters.ts). */
export type { HostStats } from '../src/stats/counters';

export interface SessionInput {
  campaignKey: string;
  /** Where to nudge the campaign (new ready hosts, a freed slot, a budget reached). */
  campaignWorkflowId: string;
  host: string;
  /** The dispatch generation the host workflow holds its slot with (released when the frontier runs dry). */
  gen: number;
  /** Settings version the workflow knows of; the session uses the newest there is. */
  configVersion: number;
  /** How long the workflow slept before this session (the politeness-wait metric). */
  sleptMs?: number;
  /**
   * The host's first session, run as a local activity inside the workflow's
   * task: it ends at session.firstLocalMs (well under the workflow-task
   * timeout) and hands the rest of the host to regular sessions.
   */
  local?: true;
  /**
   * The run's number for a regular session: the worker records it under its lease, and a live
   * worker that finds that lease run out tells the run which of its sessions was lost.
   */
  session?: number;
}

/**
 * Why a session ended. drained: the frontier is empty (`released` says
 * whether the host gave its slot up). wait: the next request is due
 * `waitMs` from now, at or above the durable-sleep threshold. cap: it
 * reached its page or time cap. config: the settings changed. paused: the
 * campaign or this host is paused. stopped: the campaign ends (`stop`).
 */
export type SessionEnd = 'drained' | 'wait' | 'cap' | 'config' | 'paused' | 'stopped';

export interface SessionResult {
  end: SessionEnd;
  waitMs: number;
  /** For wait: a back-off (the host is failing or asked us to slow down), not a plain crawl-delay. */
  backingOff: boolean;
  /** For wait: a revisit host waiting for its next due URL, whose sleep a wake (new URLs) may end early. */
  wakeable?: boolean;
  released: boolean;
  stop: 'budget' | 'cancelled' | 'drained' | null;
  /** Settings version in force when the session ended. */
  configVersion: number;
  /** URLs finished by this session. */
  pages: number;
  /** The host's counters so far (all sessions). */
  stats: HostStats;
  frontier: number;
  delayMs: number;
  /** Why the host waits what it waits: robots.txt Crawl-delay, an operator's delay, Retry-After… */
  reason: string;
  lastUrl: string | null;
  lastStatus: number | null;
  /** Revisit campaigns: the host's revisit queue when the session ended. */
  revisit?: RevisitView;
}

/** One dispatch round of the campaign: ready hosts started or woken, and where the campaign stands. */
export interface DispatchInput {
  campaignKey: string;
  campaignId: string;
  campaignWorkflowId: string;
  taskQueue: string;
  /** Most hosts to hold a slot at once (null = unlimited). */
  maxActiveHosts: number | null;
  /** Also look for host workflows that ended without releasing their slot (the domain watch). */
  watch: boolean;
  /** Only runs closed since (ISO 8601), for the watch. */
  watchSince: string;
}

export interface CampaignSnapshot {
  dispatched: number;
  active: number;
  ready: number;
  paused: boolean;
  stop: 'budget' | 'cancelled' | 'drained' | null;
  configVersion: number;
  totals: HostStats & { hosts: number; frontier: number; seenFilter?: SeenFilterTotals };
  problems: number;
  /** Hosts given up by the watch in this round. */
  givenUp: number;
}

export interface ReleaseHostInput {
  campaignKey: string;
  campaignWorkflowId: string;
  host: string;
  gen: number;
}

export interface FinishCampaignInput {
  campaignKey: string;
  campaignId: string;
  reason: 'budget' | 'cancelled' | 'drained';
}

export interface CampaignSummary {
  totals: HostStats & { hosts: number; frontier: number; seenFilter?: SeenFilterTotals };
  active: number;
  problems: { count: number; list: string[] };
  /**
   * The sealed index (src/storage/seal.ts): its file, its lines (one per URL
   * committed), raw lines left out, committed URLs without a line, and the
   * committed responses stored as revisit records with the payload bytes
   * they did not store again, and the committed HTML pages rendered in a
   * browser (absent from older workers' summaries). null when sealing
   * failed (see problems).
   */
  sealed?: {
    file: string;
    lines: number;
    dropped: number;
    missing: number | null;
    revisits: { records: number; bytesSaved: number };
    rendered?: { pages: number; htmlPages: number; reasons: Record<string, number> };
  } | null;
}

/** The activity surface the workflows call (implemented by createActivities). */
export interface CrawlerActivities {
  prepareCampaign(input: PrepareCampaignInput): Promise<PrepareCampaignResult>;
  /** The next batches of the campaign's seed list into the frontiers. */
  loadSeeds(input: LoadSeedsInput): Promise<LoadSeedsResult>;
  crawlSession(input: SessionInput): Promise<SessionResult>;
  dispatchHosts(input: DispatchInput): Promise<CampaignSnapshot>;
  /** Tells every host still holding a slot to stop (its sessions see it within a second) and wakes the sleeping ones. */
  finishCampaign(input: FinishCampaignInput): Promise<{ signalled: number }>;
  summarizeCampaign(input: { campaignKey: string; problems: number }): Promise<CampaignSummary>;
  /**
   * An output in a bucket, the campaign drained: seals once to find the committed URLs whose line
   * (or WARC record) never reached the bucket, and puts them back in their frontiers
   * (activities/requeue-lost.ts). `requeued` 0: nothing was lost.
   */
  requeueLostPages(input: { campaignKey: string }): Promise<{ requeued: number; hosts: number }>;
  releaseHost(input: ReleaseHostInput): Promise<{ released: boolean }>;
}

// ---- Operator steering (activities/steer-campaign.ts) ----

/** One operator change, as the campaign's update handlers validated it. */
export type SteerChange =
  | { kind: 'pause' }
  | { kind: 'resume' }
  | { kind: 'pause-host'; host: string }
  | { kind: 'resume-host'; host: string }
  /** host null: the campaign-wide minimum delay. */
  | { kind: 'delay'; host: string | null; minDelayMs: number }
  /** A field left out is unchanged, null = unlimited. */
  | { kind: 'budgets'; budgets: { maxPages?: number | null; maxDepth?: number | null } }
  /** One host's render mode; null: the campaign's own again. */
  | { kind: 'render'; host: string; render: RenderMode | null };

export interface SteerCampaignInput {
  campaignKey: string;
  campaignId: string;
  /** The settings version this change becomes (the campaign's current one + 1), so a retried attempt is recognised. */
  version: number;
  change: SteerChange;
}

export interface SteerCampaignResult {
  configVersion: number;
  /** For a change to one host: the campaign's key for it (the operator may have typed it without its port). */
  host?: string;
  budgets: { maxPages: number | null; maxDepth: number | null };
}

export interface AddCampaignSeedsInput {
  campaignKey: string;
  configVersion: number;
  seeds: string[];
}

export interface AddCampaignSeedsResult {
  accepted: string[];
  rejected: { seed: string; reason: string }[];
  /** Hosts that got new URLs (marked ready for the next dispatch). */
  hosts: number;
}

// Declaration merging keeps this section self-contained.
export interface CrawlerActivities {
  steerCampaign(input: SteerCampaignInput): Promise<SteerCampaignResult>;
  addCampaignSeeds(input: AddCampaignSeedsInput): Promise<AddCampaignSeedsResult>;
}
