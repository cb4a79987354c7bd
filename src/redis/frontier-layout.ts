// Which layout a campaign's seen sets and frontier members have in Redis
// (issue 40, parts 2 and 4). A campaign created since the compact forms
// (layout 2: seen sets as buckets of 64-bit fingerprints, src/redis/seen-set.ts;
// frontier members without scheme and host, src/redis/frontier.ts) carries a
// marker written when it is created (prepareCampaign); a campaign created
// before has none and keeps layout 1 (a SET of fingerprints a host, members
// of the tab-separated form) for its whole life, whatever release its
// workers run: an older worker still running in a rolling upgrade reads and
// writes what it always did, and a newer one writes the same. Read once a
// process per campaign: a marker never changes.
//
// Its own field of the content index's meta hash (`seen`), not the
// content-format marker (`v`, src/dedup/content-format.ts): campaigns created
// by the release that brought the compact content index have `v` = 2 and the
// layout-1 seen sets, so one shared marker could not tell them apart. The same
// hash: one small key under the campaign's hash tag holds every layout marker,
// and a retention or purge already reaches it (src/redis/retention.ts).
import { contentKeys } from './keys';
import type { RedisLike } from './scripts';

export type FrontierLayout = 1 | 2;

/** The layout new campaigns get. */
export const FRONTIER_LAYOUT: FrontierLayout = 2;

/** The meta hash's field that holds the marker. */
export const FRONTIER_LAYOUT_FIELD = 'seen';

const known = new Map<string, Promise<FrontierLayout>>();

/** The campaign's seen-set and frontier layout: 2 when its marker says so, else 1. */
export function frontierLayout(redis: RedisLike, campaignKey: string): Promise<FrontierLayout> {
  let f = known.get(campaignKey);
  if (!f) {
    f = redis.hget(contentKeys(campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD).then((v): FrontierLayout => (v === '2' ? 2 : 1));
    // A failed read is not remembered: the next call asks again.
    f.catch(() => known.delete(campaignKey));
    known.set(campaignKey, f);
  }
  return f;
}

/**
 * Marks a new campaign with the current layout, before any URL of it is
 * enqueued. A marker already there (a retried creation) stays as it is.
 */
export async function markFrontierLayout(redis: RedisLike, campaignKey: string, layout: FrontierLayout = FRONTIER_LAYOUT): Promise<void> {
  if (layout === 2) await redis.hsetnx(contentKeys(campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD, '2');
  known.delete(campaignKey);
}

/** Forgets every layout read (tests that write a campaign's keys themselves). */
export function forgetFrontierLayouts(): void {
  known.clear();
}
