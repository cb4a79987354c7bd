// What a campaign workflow carries through continue-as-new (and keeps as its
// state between looks at Redis): settings an operator changed, small
// counters and its last look's totals. Nothing in it grows with hosts or
// pages (workflows/campaign-state.ts).
import type { SeedListPosition } from '../activities/types';
import type { CampaignTotals } from './messages';

export interface CampaignCarry {
  campaignKey: string;
  configVersion: number;
  startedAt: number;
  maxActiveHosts: number | null;
  minDelayMs: number | null;
  budgets: { maxPages: number | null; maxDepth: number | null };
  pausedHosts: number;
  paused: boolean;
  watchSince: number;
  /** When the watch last looked (absent in carries from before it was kept: the watch is then due). */
  watchedAt?: number;
  /** Lost-page checks run so far (an output in a bucket, workflows/crawl-campaign.ts); absent: none. */
  lostChecks?: number;
  snapshot: { totals: CampaignTotals; problems: number; at: number } | null;
  /** How far the seed list has been read into the frontiers (null: no seed list). */
  seeds: { next: SeedListPosition; done: boolean; read: number; error?: string } | null;
}
