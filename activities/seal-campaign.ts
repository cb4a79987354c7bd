// Sealing a campaign's index with what Redis knows: which attempt's commit
// counted for each URL (src/storage/seal.ts does the files). Used by the
// campaign's summary at its end and by `crawler seal`.
import { loadCampaignSettings } from '../src/redis/campaign-store';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier } from '../src/redis/frontier';
import type { RedisLike } from '../src/redis/scripts';
import { sealCampaignIndex, type SealResult } from '../src/storage/seal';
import { sealCampaignDatasets, type SealedDataset } from '../src/storage/seal-dataset';
import { writeCampaignCdxj, type CdxjResult } from '../src/storage/cdxj';
import { StorageError } from '../src/storage/storage-error';

export interface SealCampaignOptions {
  /** The output folder as this process sees it; default the campaign's (`output.dir`). */
  outputDir?: string;
  /** Recorded in the manifest (why it was sealed, the campaign's status). */
  info?: Record<string, unknown>;
  onProgress?: () => void;
  /** Also index the WARC files for replay (default true; the summary leaves it to `crawler cdxj` for very large WARCs). */
  cdxj?: boolean;
  /**
   * How long to wait for another writer of the folder's index.cdxj (a
   * campaign sharing the folder); past it the seal goes on without the
   * replay index and says so in `cdxjSkipped`. Default: wait (up to 30 min), then fail.
   */
  cdxjLockWaitMs?: number;
}

/**
 * Writes the campaign's sealed index. The campaign's totals must be up to
 * date with the hosts' counters (summarizeCampaign reconciles them first):
 * they say how many URLs were committed, so a committed URL without its
 * line shows as `missing`.
 */
export async function sealCampaign(
  redis: RedisLike,
  campaignKey: string,
  opts: SealCampaignOptions = {},
): Promise<SealResult & { datasets: SealedDataset[]; cdxj: CdxjResult | null; cdxjSkipped?: string }> {
  const { settings } = await loadCampaignSettings(redis, campaignKey);
  const t = await new CampaignHosts(redis, campaignKey).totals();
  const outputDir = opts.outputDir ?? settings.output.dir;
  const index = await sealCampaignIndex({
    outputDir,
    campaignId: settings.campaignId,
    committed: (host, fps) => new Frontier(redis, campaignKey, host).committedAttempts(fps),
    // A revisit campaign counts every visit but seals a URL's last one: no expectation to check against.
    expectedLines: settings.revisit?.enabled ? null : t.fetched + t.failed + t.skipped,
    info: { campaignKey, ...opts.info },
    onProgress: opts.onProgress,
  });
  // A handler's items: those of the attempts the sealed index kept.
  const datasets = await sealCampaignDatasets(outputDir, settings.campaignId);
  // The replay index covers every response and revisit record in the WARC
  // files, not only the sealed lines' own: a revisit may refer to a copy
  // written by an attempt whose commit did not count.
  if (opts.cdxj === false) return { ...index, datasets, cdxj: null };
  try {
    return { ...index, datasets, cdxj: await writeCampaignCdxj(outputDir, settings.campaignId, undefined, { lockWaitMs: opts.cdxjLockWaitMs }) };
  } catch (err) {
    if (opts.cdxjLockWaitMs === undefined || !(err instanceof StorageError && err.code === 'LOCKED')) throw err;
    return { ...index, datasets, cdxj: null, cdxjSkipped: err.message };
  }
}
