import { ApplicationFailure } from '@temporalio/activity';
import { saveCampaignSettings } from '../src/redis/campaign-store';
import type { WorkerRuntime } from './runtime';
import { enqueueSeeds, groupSeeds } from './seeds';
import type { PrepareCampaignInput, PrepareCampaignResult } from './types';
import { createScope } from '../src/url/scope';

/**
 * Validates the seeds, stores the settings for the workers and puts the
 * seeds in their hosts' frontiers. Idempotent: the seen-sets make a retry
 * enqueue nothing twice.
 */
export function prepareCampaignActivity(rt: WorkerRuntime) {
  return async function prepareCampaign(input: PrepareCampaignInput & { campaignKey: string }): Promise<PrepareCampaignResult> {
    const { settings, campaignKey } = input;
    const { byHost, rejected: rejectedSeeds } = groupSeeds(settings.seeds);
    try {
      createScope(settings.scope, [...byHost.values()].flat().map((s) => s.url));
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`invalid scope: ${(err as Error).message}`, 'InvalidCampaignInput');
    }
    const configVersion = 1;
    await saveCampaignSettings(rt.deps.redis, campaignKey, configVersion, settings);
    await enqueueSeeds(rt.deps.redis, campaignKey, byHost, settings);
    return { hosts: [...byHost.keys()], rejectedSeeds, configVersion };
  };
}
