// Seeds into frontiers, shared by prepareCampaign (the campaign's own seeds)
// and addCampaignSeeds (an operator's, later): normalise, group by host,
// enqueue at depth 0 with the campaign's frontier priorities. Enqueueing is
// mark-seen-and-enqueue, so a retry adds nothing twice.
import { frontierPriority, type CampaignSettings } from '../src/config/campaign';
import { loadCampaignSettings } from '../src/redis/campaign-store';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey, normalizeUrl } from '../src/url/normalize';
import { isUrlError } from '../src/url/url-error';
import { Frontier } from '../src/redis/frontier';
import type { RedisLike } from '../src/redis/scripts';

export interface GroupedSeeds {
  /** Normalised seed URLs by politeness key (host). */
  byHost: Map<string, { seed: string; url: string }[]>;
  rejected: { seed: string; reason: string }[];
}

/** Normalises seeds (bad URLs and unsupported schemes are rejected with the reason) and groups them by host. */
export function groupSeeds(seeds: string[], allows: (url: string) => boolean = () => true): GroupedSeeds {
  const byHost = new Map<string, { seed: string; url: string }[]>();
  const rejected: GroupedSeeds['rejected'] = [];
  for (const seed of seeds) {
    let url: string;
    try {
      url = normalizeUrl(seed);
    } catch (err) {
      if (!isUrlError(err)) throw err;
      rejected.push({ seed, reason: err.message });
      continue;
    }
    if (!allows(url)) {
      rejected.push({ seed, reason: `out of the campaign's scope: ${url}` });
      continue;
    }
    const host = hostKey(url);
    const list = byHost.get(host) ?? [];
    list.push({ seed, url });
    byHost.set(host, list);
  }
  return { byHost, rejected };
}

/**
 * Puts grouped seeds in their hosts' frontiers at depth 0, each at its
 * frontier priority; returns the seeds each host had not seen before.
 * Without `settings` the campaign's stored settings are read, so no caller
 * can enqueue seeds that skip the priority rules.
 */
export async function enqueueSeeds(
  redis: RedisLike,
  campaignKey: string,
  byHost: GroupedSeeds['byHost'],
  settings?: Pick<CampaignSettings, 'frontier'>,
): Promise<Map<string, number>> {
  const s = settings ?? (byHost.size > 0 ? (await loadCampaignSettings(redis, campaignKey)).settings : {});
  const added = new Map<string, number>();
  for (const [host, items] of byHost) {
    const r = await new Frontier(redis, campaignKey, host).enqueue(
      items.map(({ url }) => ({ url, fp: urlFingerprint(url), depth: 0, referrer: null, priority: frontierPriority(url, s) })),
    );
    added.set(host, r.added);
  }
  return added;
}
