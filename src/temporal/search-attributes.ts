// Custom search attributes that make the Temporal Web UI a crawl console:
// filter by campaign, host or state, sort by pages. Pure module: workflows
// import it, and the embedded stack registers the same list at start-up.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

export const CrawlCampaign = defineSearchAttributeKey('CrawlCampaign', SearchAttributeType.KEYWORD);
export const CrawlHost = defineSearchAttributeKey('CrawlHost', SearchAttributeType.KEYWORD);
export const CrawlState = defineSearchAttributeKey('CrawlState', SearchAttributeType.KEYWORD);
export const CrawlPages = defineSearchAttributeKey('CrawlPages', SearchAttributeType.INT);
export const CrawlErrors = defineSearchAttributeKey('CrawlErrors', SearchAttributeType.INT);
/**
 * Revisit campaigns: when the host's next URL is due (`CrawlNextDue < '…'`
 * finds hosts with work within an hour) and how many are due within a day,
 * as of its last session. Only one more Int: the dev server allows three.
 */
export const CrawlNextDue = defineSearchAttributeKey('CrawlNextDue', SearchAttributeType.DATETIME);
export const CrawlDueDay = defineSearchAttributeKey('CrawlDueDay', SearchAttributeType.INT);

/** A value (a campaign ID, a task queue) as a string literal of a visibility query: quoted, its quotes and backslashes escaped. */
export function queryLiteral(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Name → type as the `temporal` CLI and the operator API spell them. */
export const CRAWL_SEARCH_ATTRIBUTES: ReadonlyArray<{ name: string; cliType: 'Keyword' | 'Int' | 'Datetime' }> = [
  { name: CrawlCampaign.name, cliType: 'Keyword' },
  { name: CrawlHost.name, cliType: 'Keyword' },
  { name: CrawlState.name, cliType: 'Keyword' },
  { name: CrawlPages.name, cliType: 'Int' },
  { name: CrawlErrors.name, cliType: 'Int' },
  { name: CrawlNextDue.name, cliType: 'Datetime' },
  { name: CrawlDueDay.name, cliType: 'Int' },
];
