// Operator steering that needs Redis: new budgets saved as a new settings
// version (activities reload their cached settings when a step asks for a
// newer version than they hold), and seeds added to a running campaign.
import { loadCampaignSettings, saveCampaignSettings } from '../src/redis/campaign-store';
import { campaignKeys, hostKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { urlFingerprint } from '../src/url/fingerprint';
import type { WorkerRuntime } from './runtime';
import { enqueueSeeds, groupSeeds } from './seeds';
import type { AddCampaignSeedsInput, AddCampaignSeedsResult, UpdateCampaignSettingsInput, UpdateCampaignSettingsResult } from './types';

/** Budget slots added per SADD when pages fetched while unlimited are brought into the budget. */
const FILL_CHUNK = 1_000;

/**
 * Saves the campaign's settings with the new budgets as `input.version`.
 * Idempotent: settings already at that version (an earlier attempt got
 * through) are returned as they are.
 */
export function updateCampaignSettingsActivity(rt: WorkerRuntime) {
  return async function updateCampaignSettings(input: UpdateCampaignSettingsInput): Promise<UpdateCampaignSettingsResult> {
    const redis = rt.deps.redis;
    const stored = await loadCampaignSettings(redis, input.campaignKey);
    const pick = (b: { maxPages: number | null; maxDepth: number | null }) => ({ maxPages: b.maxPages, maxDepth: b.maxDepth });
    if (stored.version >= input.version) return { configVersion: stored.version, budgets: pick(stored.settings.budgets) };
    const budgets = { ...stored.settings.budgets, ...input.budgets };
    if (stored.settings.budgets.maxPages === null && budgets.maxPages !== null && input.hosts?.length) {
      await fillBudget(redis, input.campaignKey, input.version, input.hosts);
    }
    await saveCampaignSettings(redis, input.campaignKey, input.version, { ...stored.settings, budgets });
    return { configVersion: input.version, budgets: pick(budgets) };
  };
}

/**
 * While maxPages is unlimited no page takes a budget slot, so a budget set
 * later would count from zero. Give the pages fetched so far (the hosts'
 * own counters) slots first, so "stop at N pages" means N in all.
 */
async function fillBudget(redis: RedisLike, campaignKey: string, version: number, hosts: string[]): Promise<void> {
  const counts = await Promise.all(hosts.map((h) => redis.hget(hostKeys(campaignKey, h).stats, 'fetched')));
  const fetched = counts.reduce((sum, c) => sum + (Number(c) || 0), 0);
  const budgetKey = campaignKeys(campaignKey).budget;
  const missing = fetched - (await redis.scard(budgetKey));
  for (let i = 0; i < missing; i += FILL_CHUNK) {
    const members = Array.from({ length: Math.min(FILL_CHUNK, missing - i) }, (_, j) => `fetched-while-unlimited:${version}:${i + j}`);
    await redis.sadd(budgetKey, ...members);
  }
}

/**
 * Seeds added by an operator: normalised, checked against the campaign's
 * scope and enqueued at depth 0 like the campaign's own seeds. Seeds the
 * campaign has already seen are reported as rejected (they would not be
 * fetched again); so is a seed of a retried attempt that got through.
 */
export function addCampaignSeedsActivity(rt: WorkerRuntime) {
  return async function addCampaignSeeds(input: AddCampaignSeedsInput): Promise<AddCampaignSeedsResult> {
    const redis = rt.deps.redis;
    const campaign = await rt.campaign(input.campaignKey, input.configVersion);
    const { byHost, rejected } = groupSeeds(input.seeds, (url) => campaign.scope.allows(url));
    const accepted: string[] = [];
    for (const [host, items] of byHost) {
      const seen = hostKeys(input.campaignKey, host).seen;
      const fresh: typeof items = [];
      const urls = new Set<string>();
      for (const it of items) {
        if (urls.has(it.url)) {
          rejected.push({ seed: it.seed, reason: `same URL as another seed of this request: ${it.url}` });
          continue;
        }
        if ((await redis.sismember(seen, urlFingerprint(it.url))) === 1) {
          rejected.push({ seed: it.seed, reason: `already seen by this campaign: ${it.url}` });
          continue;
        }
        urls.add(it.url);
        fresh.push(it);
      }
      if (fresh.length === 0) byHost.delete(host);
      else byHost.set(host, fresh);
      accepted.push(...fresh.map((it) => it.seed));
    }
    const added = await enqueueSeeds(redis, input.campaignKey, byHost);
    return { accepted, rejected, hosts: [...added.keys()] };
  };
}
