// What a campaign shows of its bookkeeping: the status query's answer, the
// Web UI's card and the workflow's result. Read-only views of CampaignBook
// (workflows/campaign-state.ts), kept apart from the rules that change it.
import type { CampaignSummary } from '../activities/types';
import type { CampaignResult, CampaignRunStatus, CampaignStatus, CampaignTotals } from './messages';
import type { CampaignSettings } from '../src/config/campaign';
import type { CampaignCarry } from './campaign-carry';
import { hostStatsOf } from '../src/stats/counters';
import { embedsOf, sealedOf } from './result-counts';
import { campaignCard } from './status-card';

/** What the views read of CampaignBook. */
interface BookView {
  readonly carry: CampaignCarry;
  readonly settings: CampaignSettings;
  readonly status: CampaignRunStatus;
  readonly dispatchError: { message: string; at: number; failures: number } | null;
}

const emptyTotals = (): CampaignTotals => ({ ...hostStatsOf(), hosts: 0, activeHosts: 0, readyHosts: 0, frontier: 0 });

/** What the status query and `crawler status` show: as of the last look at Redis. */
export function statusViewOf(book: BookView, campaignId: string): CampaignStatus {
  const snap = book.carry.snapshot;
  return {
    campaignId,
    campaignKey: book.carry.campaignKey,
    status: book.status,
    paused: book.carry.paused,
    startedAt: new Date(book.carry.startedAt).toISOString(),
    totals: snap?.totals ?? emptyTotals(),
    updatedAt: new Date(snap?.at ?? book.carry.startedAt).toISOString(),
    problems: snap?.problems ?? 0,
    steering: {
      configVersion: book.carry.configVersion,
      minDelayMs: book.carry.minDelayMs ?? book.settings.politeness.minDelayMs,
      budgets: book.carry.budgets,
      maxActiveHosts: book.carry.maxActiveHosts,
      pausedHosts: book.carry.pausedHosts,
    },
    ...(book.settings.revisit?.enabled ? { revisit: true } : {}),
    ...(book.dispatchError
      ? { dispatchError: { message: book.dispatchError.message, at: new Date(book.dispatchError.at).toISOString(), failures: book.dispatchError.failures } }
      : {}),
  };
}

/** The Web UI's status card: as of the last look at Redis, or the final summary's totals at the end. */
export function cardOf(book: BookView, campaignId: string, summary?: CampaignSummary): string {
  const view = statusViewOf(book, campaignId);
  if (!summary) return campaignCard(view, book.carry.snapshot?.problems ?? 0);
  return campaignCard({ ...view, totals: { ...view.totals, ...summary.totals, activeHosts: summary.active, readyHosts: 0 } }, summary.problems.count);
}

/** The workflow's result, from the final summary. */
export function resultOf(book: BookView, campaignId: string, summary: CampaignSummary, now: number): CampaignResult {
  const t = summary.totals;
  return {
    campaignId,
    status: book.status,
    startedAt: new Date(book.carry.startedAt).toISOString(),
    finishedAt: new Date(now).toISOString(),
    durationMs: now - book.carry.startedAt,
    hosts: t.hosts,
    pages: t.fetched,
    failed: t.failed,
    skipped: t.skipped,
    ...embedsOf(t),
    bytes: t.bytes,
    outputDir: book.settings.output.dir,
    ...sealedOf(summary.sealed, book.settings.render !== 'off'),
    ...(t.seenFilter ? { seenFilter: t.seenFilter } : {}),
    problems: [...(book.carry.seeds?.error ? [`seed list ${book.settings.seedsFile}: ${book.carry.seeds.error}`] : []), ...summary.problems.list],
    problemCount: summary.problems.count + (book.carry.seeds?.error ? 1 : 0),
  };
}
