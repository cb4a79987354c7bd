// Sealing a campaign's index with what Redis knows: which attempt's commit
// counted for each URL (src/storage/seal.ts does the files). Used by the
// campaign's summary at its end and by `crawler seal`.
import { loadCampaignSettings } from '../src/redis/campaign-store';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier } from '../src/redis/frontier';
import type { RedisLike } from '../src/redis/scripts';
import { sealCampaignIndex, type SealResult } from '../src/storage/seal';

export interface SealCampaignOptions {
  /** The output folder as this process sees it; default the campaign's (`output.dir`). */
  outputDir?: string;
  /** Recorded in the manifest (why it was sealed, the campaign's status). */
  info?: Record<string, unknown>;
  onProgress?: () => void;
}

/**
 * Writes the campaign's sealed index. The campaign's totals must be up to
 * date with the hosts' counters (summarizeCampaign reconciles them first):
 * they say how many URLs were committed, so a committed URL without its
 * line shows as `missing`.
 */
export async function sealCampaign(redis: RedisLike, campaignKey: string, opts: SealCampaignOptions = {}): Promise<SealResult> {
  const { settings } = await loadCampaignSettings(redis, campaignKey);
  const t = await new CampaignHosts(redis, campaignKey).totals();
  return sealCampaignIndex({
    outputDir: opts.outputDir ?? settings.output.dir,
    campaignId: settings.campaignId,
    committed: (host, fps) => new Frontier(redis, campaignKey, host).committedAttempts(fps),
    expectedLines: t.fetched + t.failed + t.skipped,
    info: { campaignKey, ...opts.info },
    onProgress: opts.onProgress,
  });
}
