// The parts of a campaign's result that exist only for some campaigns
// (pure, run inside the workflow): left out when there is nothing to say, so
// page-only campaigns keep the result older releases gave.
import type { CampaignSummary } from '../activities/types';
import { embedCounts, type HostStats } from '../src/stats/counters';
import type { CampaignResult } from './messages';

/** Page requisites, apart from pages: only once there are any. */
export function embedsOf(t: HostStats): Pick<CampaignResult, 'embeds'> {
  const embeds = embedCounts(t);
  return embeds ? { embeds } : {};
}

/** The summary's rendered pages: shown when the campaign renders, or when a page was rendered. */
export function renderedOf(r: { pages: number; htmlPages: number; reasons: Record<string, number> } | undefined, renders: boolean): Pick<CampaignResult, 'rendered'> {
  if (!r || (!renders && r.pages === 0)) return {};
  return { rendered: { ...r, share: r.htmlPages > 0 ? Math.round((r.pages / r.htmlPages) * 1000) / 1000 : 0 } };
}

/** The sealed index, its revisit records and rendered pages. Summaries of older workers have no seal (undefined); a failed seal is null. */
export function sealedOf(sealed: CampaignSummary['sealed'], renders: boolean): Pick<CampaignResult, 'sealedIndex' | 'revisits' | 'rendered'> {
  if (sealed === null) return { sealedIndex: null };
  if (!sealed) return {};
  return {
    sealedIndex: { file: sealed.file, lines: sealed.lines, dropped: sealed.dropped, missing: sealed.missing },
    revisits: sealed.revisits,
    ...renderedOf(sealed.rendered, renders),
  };
}
