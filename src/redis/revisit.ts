// A host's revisit schedule (continuous crawling, docs/continuous-crawling.md):
// a sorted set of frontier members by the time they are due again, and beside
// it per URL what the next visit needs (interval, ETag / Last-Modified, the
// last payload digest and capture). Both under the host's hash tag, with
// its frontier: the scripts that move due URLs into the frontier touch one
// slot, so they run unchanged on Redis Cluster.
import type { RevisitMeta, RevisitVerdict } from '../revisit/adapt';
import { hostKeys } from './keys';
import type { RedisLike } from './scripts';

const HOUR_MS = 60 * 60_000;
const DAY_MS = 24 * HOUR_MS;
/** Most due URLs moved into the frontier at once (a session's page cap is of the same order). */
export const REVISIT_BATCH = 1_000;

/** Where a host's revisit queue stands. `nextInMs` null: nothing scheduled. */
export interface RevisitQueue {
  scheduled: number;
  nextInMs: number | null;
  dueHour: number;
  dueDay: number;
}

export class RevisitSchedule {
  private readonly keys: ReturnType<typeof hostKeys>;

  constructor(
    private readonly redis: RedisLike,
    campaignKey: string,
    readonly host: string,
  ) {
    this.keys = hostKeys(campaignKey, host);
  }

  /** Moves what is due into the frontier; returns how many and where the queue stands afterwards. */
  async moveDue(limit = REVISIT_BATCH): Promise<{ moved: number } & RevisitQueue> {
    const k = this.keys;
    const [moved, wait, dueHour, dueDay, scheduled] = await this.redis.crawlRevisitDue(k.revisit, k.frontier, k.seq, limit, HOUR_MS, DAY_MS);
    return { moved, nextInMs: wait < 0 ? null : wait, dueHour, dueDay, scheduled };
  }

  /** Where the queue stands (moves nothing). */
  async queue(): Promise<RevisitQueue> {
    const { moved: _moved, ...q } = await this.moveDue(0);
    return q;
  }

  async meta(fp: string): Promise<RevisitMeta | null> {
    const raw = await this.redis.hget(this.keys.revisitMeta, fp);
    if (!raw) return null;
    try {
      return JSON.parse(raw) as RevisitMeta;
    } catch {
      return null;
    }
  }

  /**
   * The URL's next visit `intervalMs` from now (null: it leaves the
   * schedule), its meta, and one more of `verdict` in the host's counters
   * (`revisit-changed`, `revisit-unchanged`, `revisit-gone`…).
   */
  async set(member: string, fp: string, intervalMs: number | null, meta: RevisitMeta | null, verdict: RevisitVerdict): Promise<void> {
    const k = this.keys;
    await this.redis.crawlRevisitSet(k.revisit, k.revisitMeta, k.stats, member, fp, intervalMs ?? -1, meta ? JSON.stringify(meta) : '', `revisit-${verdict}`);
  }
}

/** The campaign's revisit queue: URLs scheduled, due now, within an hour, within a day, and the earliest. */
export interface RevisitTotals {
  scheduled: number;
  dueNow: number;
  dueHour: number;
  dueDay: number;
  nextDueAt: string | null;
}

/**
 * Sums the revisit queues of `hosts` (what `crawler status` shows), one
 * pipelined round trip per batch of hosts. `now` is this machine's clock:
 * good enough for a display.
 */
export async function revisitTotals(redis: RedisLike, campaignKey: string, hosts: string[], now = Date.now()): Promise<RevisitTotals> {
  const t: RevisitTotals = { scheduled: 0, dueNow: 0, dueHour: 0, dueDay: 0, nextDueAt: null };
  let earliest = Infinity;
  for (let i = 0; i < hosts.length; i += 200) {
    const batch = hosts.slice(i, i + 200);
    const p = redis.pipeline();
    for (const h of batch) {
      const z = hostKeys(campaignKey, h).revisit;
      p.zcard(z)
        .zcount(z, '-inf', now)
        .zcount(z, '-inf', now + HOUR_MS)
        .zcount(z, '-inf', now + DAY_MS)
        .zrange(z, 0, 0, 'WITHSCORES');
    }
    const res = (await p.exec()) ?? [];
    for (let j = 0; j < batch.length; j++) {
      const v = (k: number) => res[j * 5 + k]?.[1];
      t.scheduled += Number(v(0) ?? 0);
      t.dueNow += Number(v(1) ?? 0);
      t.dueHour += Number(v(2) ?? 0);
      t.dueDay += Number(v(3) ?? 0);
      const head = v(4) as string[] | undefined;
      if (head && head.length === 2) earliest = Math.min(earliest, Number(head[1]));
    }
  }
  if (earliest !== Infinity) t.nextDueAt = new Date(earliest).toISOString();
  return t;
}

/** Adds the first-interval hints of URLs with no history yet (a sitemap's <changefreq> / <lastmod>); URLs already known keep theirs. */
export async function hintRevisits(redis: RedisLike, campaignKey: string, host: string, hints: { fp: string; intervalMs: number }[]): Promise<void> {
  if (hints.length === 0) return;
  const meta = hostKeys(campaignKey, host).revisitMeta;
  const p = redis.pipeline();
  for (const h of hints) p.hsetnx(meta, h.fp, JSON.stringify({ i: h.intervalMs } satisfies RevisitMeta));
  await p.exec();
}
