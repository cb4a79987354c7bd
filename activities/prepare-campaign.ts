import { ApplicationFailure } from '@temporalio/activity';
import { urlFingerprint } from '../src/url/fingerprint';
import { hostKey, normalizeUrl } from '../src/url/normalize';
import { isUrlError } from '../src/url/url-error';
import { saveCampaignSettings } from '../src/redis/campaign-store';
import { Frontier } from '../src/redis/frontier';
import type { WorkerRuntime } from './runtime';
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
    const rejectedSeeds: PrepareCampaignResult['rejectedSeeds'] = [];
    const byHost = new Map<string, string[]>();
    for (const seed of settings.seeds) {
      try {
        const url = normalizeUrl(seed);
        const host = hostKey(url);
        byHost.set(host, [...(byHost.get(host) ?? []), url]);
      } catch (err) {
        if (!isUrlError(err)) throw err;
        rejectedSeeds.push({ seed, reason: err.message });
      }
    }
    try {
      createScope(settings.scope, [...byHost.values()].flat());
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`invalid scope: ${(err as Error).message}`, 'InvalidCampaignInput');
    }
    const configVersion = 1;
    await saveCampaignSettings(rt.deps.redis, campaignKey, configVersion, settings);
    for (const [host, urls] of byHost) {
      await new Frontier(rt.deps.redis, campaignKey, host).enqueue(urls.map((url) => ({ url, fp: urlFingerprint(url), depth: 0, referrer: null })));
    }
    return { hosts: [...byHost.keys()], rejectedSeeds, configVersion };
  };
}
