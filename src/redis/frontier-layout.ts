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
//
// The seen set's kind (`frontier.seen` of the campaign's settings: exact or
// bloom) is a second field of the same hash, `seenFilter`, written with the
// layout when the campaign is created and never changed: `bloom <rate>` for a
// Bloom filter at that rate (src/redis/seen-bloom.ts), absent for the exact
// set. A campaign created before it has none and stays exact. A bloom
// campaign has layout 2's frontier members; its host's `seen` key is a
// string, so a release that knows no Bloom filter (reading layout 2's HASH
// there) fails with WRONGTYPE rather than keep a second seen set: every
// worker of a bloom campaign must run a release that knows it.
import { contentKeys } from './keys';
import type { RedisLike } from './scripts';
import type { SeenMode } from './seen-set';

export type FrontierLayout = 1 | 2;

/** The layout new campaigns get. */
export const FRONTIER_LAYOUT: FrontierLayout = 2;

/** The meta hash's field that holds the marker. */
export const FRONTIER_LAYOUT_FIELD = 'seen';

/** The meta hash's field that names a Bloom filter seen set (absent: exact). */
export const SEEN_FILTER_FIELD = 'seenFilter';

/** The seen set a new campaign asks for (its settings' frontier.seen and frontier.seenRate). */
export type SeenChoice = { kind: 'exact' } | { kind: 'bloom'; rate: number };

const known = new Map<string, Promise<FrontierLayout>>();
const modes = new Map<string, Promise<SeenMode>>();

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

/** The `seenFilter` field's value for a Bloom filter at `rate`, and back (null: not one). */
export const bloomMarker = (rate: number): string => `bloom ${rate}`;
export function bloomRateOf(marker: string | null | undefined): number | null {
  const m = /^bloom (\S+)$/.exec(marker ?? '');
  const rate = m ? Number(m[1]) : NaN;
  return Number.isFinite(rate) && rate > 0 && rate < 1 ? rate : null;
}

/**
 * What the campaign's scripts are told of its seen set (SeenMode): read once a process per
 * campaign from both markers, which never change.
 */
export function seenMode(redis: RedisLike, campaignKey: string): Promise<SeenMode> {
  let f = modes.get(campaignKey);
  if (!f) {
    f = redis.hmget(contentKeys(campaignKey, 0).meta, FRONTIER_LAYOUT_FIELD, SEEN_FILTER_FIELD).then(([layout, filter]): SeenMode => {
      if (layout !== '2') return '1';
      const rate = bloomRateOf(filter);
      return rate === null ? '2' : `b${rate}`;
    });
    f.catch(() => modes.delete(campaignKey));
    modes.set(campaignKey, f);
  }
  return f;
}

/**
 * The Bloom filter's rate of a campaign whose seen set is one, else null (exact). Read each time,
 * not remembered: totals are read before the campaign's creation has marked it, too.
 */
export async function bloomRate(redis: RedisLike, campaignKey: string): Promise<number | null> {
  return bloomRateOf(await redis.hget(contentKeys(campaignKey, 0).meta, SEEN_FILTER_FIELD));
}

/**
 * Marks a new campaign with the current layout, and the seen set it asked for, before any URL
 * of it is enqueued. A marker already there (a retried creation) stays as it is.
 */
export async function markFrontierLayout(redis: RedisLike, campaignKey: string, layout: FrontierLayout = FRONTIER_LAYOUT, seen: SeenChoice = { kind: 'exact' }): Promise<void> {
  const meta = contentKeys(campaignKey, 0).meta;
  // A campaign marked already keeps its markers: its seen set is never changed.
  if (layout === 2 && (await redis.hexists(meta, FRONTIER_LAYOUT_FIELD)) === 0) {
    // Both in one transaction: a campaign is never marked layout 2 without the filter it asked for.
    const tx = redis.multi();
    if (seen.kind === 'bloom') tx.hsetnx(meta, SEEN_FILTER_FIELD, bloomMarker(seen.rate));
    tx.hsetnx(meta, FRONTIER_LAYOUT_FIELD, '2');
    await tx.exec();
  }
  known.delete(campaignKey);
  modes.delete(campaignKey);
}

/** Forgets every layout read (tests that write a campaign's keys themselves). */
export function forgetFrontierLayouts(): void {
  known.clear();
  modes.clear();
}
