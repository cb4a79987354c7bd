// Campaign settings live in Redis once, so activity inputs (and therefore
// workflow history) only carry the campaign key and a version number.
import { resolveCampaignSettings, type CampaignSettings } from '../config/campaign';
import { campaignKeys } from './keys';
import type { RedisLike } from './scripts';
import { CrawlerError } from '../errors';

export class CampaignConfigMissingError extends CrawlerError<'CAMPAIGN_CONFIG_MISSING'> {
  constructor(readonly campaignKey: string) {
    super('CAMPAIGN_CONFIG_MISSING', `no settings stored in Redis for campaign ${campaignKey} (was Redis wiped?)`);
    this.name = 'CampaignConfigMissingError';
  }
}

export async function saveCampaignSettings(redis: RedisLike, campaignKey: string, version: number, settings: CampaignSettings): Promise<void> {
  await redis.set(campaignKeys(campaignKey).config, JSON.stringify({ version, settings }));
}

export async function loadCampaignSettings(redis: RedisLike, campaignKey: string): Promise<{ version: number; settings: CampaignSettings }> {
  const raw = await redis.get(campaignKeys(campaignKey).config);
  if (!raw) throw new CampaignConfigMissingError(campaignKey);
  const stored = JSON.parse(raw) as { version: number; settings: CampaignSettings };
  // Settings saved by an older release lack newer fields: fill in their defaults.
  return { version: stored.version, settings: resolveCampaignSettings(stored.settings, stored.settings.campaignId) };
}

/** 1 = this URL may be fetched under the page budget (idempotent per URL), 0 = budget spent. */
export async function reserveBudget(redis: RedisLike, campaignKey: string, fp: string, maxPages: number): Promise<boolean> {
  return (await redis.crawlBudgetReserve(campaignKeys(campaignKey).budget, fp, maxPages)) === 1;
}

/** The same for an embed under budgets.maxEmbeds: embeds have a budget of their own, never the pages'. */
export async function reserveEmbedBudget(redis: RedisLike, campaignKey: string, fp: string, maxEmbeds: number): Promise<boolean> {
  return (await redis.crawlBudgetReserve(campaignKeys(campaignKey).embedBudget, fp, maxEmbeds)) === 1;
}
