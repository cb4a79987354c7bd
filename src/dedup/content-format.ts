// Which layout a campaign's content index has in Redis. A campaign created
// since the compact layout (format 2, src/dedup/compact-store.ts) carries a
// marker written when it is created (prepareCampaign); a campaign created
// before has none and keeps the layout it started with (format 1: URLs in
// hash fields and values) for its whole life, whatever release its workers
// run: the two are never mixed in one campaign, so nothing has to be read
// both ways. Read once a process per campaign: a marker never changes.
// Format 3 is format 2 made smaller for the crawl's peak (issue 40): the page
// table names a URL's origin by number (an origin table), each page's SimHash
// is kept once (a table by page number) and a band record is the page's
// number and a byte of its band value, 5 bytes where format 2 has 12. A
// campaign marked 2 keeps format 2's code path, as one unmarked keeps 1's.
import type { RedisLike } from '../redis/scripts';
import { contentKeys } from '../redis/keys';

export type ContentFormat = 1 | 2 | 3;

/** The format new campaigns get. */
export const CONTENT_FORMAT: ContentFormat = 3;

const known = new Map<string, Promise<ContentFormat>>();

/** The campaign's content-index format: 2 or 3 when its marker says so, else 1. */
export function contentFormat(redis: RedisLike, campaignKey: string): Promise<ContentFormat> {
  let f = known.get(campaignKey);
  if (!f) {
    f = redis.hget(contentKeys(campaignKey, 0).meta, 'v').then((v): ContentFormat => (v === '3' ? 3 : v === '2' ? 2 : 1));
    // A failed read is not remembered: the next call asks again.
    f.catch(() => known.delete(campaignKey));
    known.set(campaignKey, f);
  }
  return f;
}

/**
 * Marks a new campaign with the current format, before any page of it is
 * checked. A marker already there (a retried creation) stays as it is.
 */
export async function markContentFormat(redis: RedisLike, campaignKey: string, format: ContentFormat = CONTENT_FORMAT): Promise<void> {
  if (format !== 1) await redis.hsetnx(contentKeys(campaignKey, 0).meta, 'v', String(format));
  known.delete(campaignKey);
}

/** Forgets every format read (tests that answer the marker themselves). */
export function forgetContentFormats(): void {
  known.clear();
}
