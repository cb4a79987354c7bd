import { ApplicationFailure } from '@temporalio/activity';
import { loadHandler } from '../src/handlers/loader';
import { loadProxyFiles } from '../src/http/proxies';
import { readCookiesFile } from '../src/http/cookies-file';
import { markContentFormat } from '../src/dedup/content-format';
import { FRONTIER_LAYOUT, markFrontierLayout } from '../src/redis/frontier-layout';
import { markSeedSegments } from '../src/redis/seed-segments';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { saveCampaignSettings } from '../src/redis/campaign-store';
import { CampaignEpoch } from '../src/redis/epoch';
import { campaignKeys } from '../src/redis/keys';
import { createScope } from '../src/url/scope';
import { compileUrlRules } from '../src/url/url-rules';
import { loadCredentialsFile } from '../src/http/credentials';
import { FailureType } from '../workflows/messages';
import type { WorkerRuntime } from './runtime';
import { spillOf } from './frontier-of';
import { enqueueSeeds, groupSeeds } from './seeds';
import type { PrepareCampaignInput, PrepareCampaignResult } from './types';

/** Rejected seeds named in the result (all of them are the campaign's problems in Redis). */
const REJECTED_SHOWN = 20;

/**
 * Validates the seeds, stores the settings for the workers, puts the seeds
 * in their hosts' frontiers and marks those hosts ready for dispatch.
 * Idempotent: the seen-sets make a retry enqueue nothing twice.
 */
export function prepareCampaignActivity(rt: WorkerRuntime) {
  return async function prepareCampaign(input: PrepareCampaignInput): Promise<PrepareCampaignResult> {
    const { settings, campaignKey } = input;
    const { byHost, rejected } = groupSeeds(settings.seeds, undefined, compileUrlRules(settings.scope));
    // A campaign seeded from a list alone gets its scope roots from the list (loadSeeds).
    const fromListOnly = settings.seeds.length === 0 && settings.seedsFile !== null;
    if (!fromListOnly) {
      try {
        createScope(
          settings.scope,
          [...byHost.values()].flat().map((s) => s.url),
        );
      } catch (err) {
        throw ApplicationFailure.nonRetryable(`invalid scope: ${(err as Error).message}`, FailureType.invalidCampaignInput);
      }
    }
    // A handler this worker cannot load would fail every page: the campaign is refused instead, before any URL is queued.
    if (settings.handler) {
      try {
        await loadHandler(settings.handler);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, 'InvalidCampaignInput');
      }
    }
    // Likewise a credentials file this worker cannot use (unreadable, readable by all, malformed): the
    // message names the file and line, never a secret. Read again by every worker that crawls.
    if (settings.fetch.credentialsFile) {
      try {
        await loadCredentialsFile(settings.fetch.credentialsFile);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.invalidCampaignInput);
      }
    }
    // So is a proxy list this worker cannot read, that every user may read, or with a bad line (named, never quoted).
    if (settings.fetch.proxyFiles.length > 0) {
      try {
        await loadProxyFiles(settings.fetch.proxyFiles);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.invalidCampaignInput);
      }
    }
    // The same for a cookies file this worker cannot read, that anyone may read, or with a malformed line.
    if (settings.cookies === 'on' && settings.cookiesFile) {
      try {
        await readCookiesFile(settings.cookiesFile);
      } catch (err) {
        throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.invalidCampaignInput);
      }
    }
    const configVersion = 1;
    const hosts = new CampaignHosts(rt.deps.redis, campaignKey);
    // The Redis server the campaign starts on: another one later means a restart that may have lost writes (src/redis/epoch.ts).
    await new CampaignEpoch(rt.deps.redis, campaignKey).check();
    await saveCampaignSettings(rt.deps.redis, campaignKey, configVersion, settings);
    // A new campaign gets the compact content index (src/dedup/content-format.ts) and the compact
    // seen sets and frontier members (src/redis/frontier-layout.ts): before the `version` below
    // and the seeds, so a campaign whose first attempt got that far under an older release,
    // which writes no marker, keeps the layout it started with.
    const created = (await rt.deps.redis.hexists(campaignKeys(campaignKey).control, 'version')) === 0;
    if (created) {
      await markContentFormat(rt.deps.redis, campaignKey);
      // The seen set the settings ask for is fixed here for the campaign's life (src/redis/frontier-layout.ts).
      const f = settings.frontier;
      await markFrontierLayout(rt.deps.redis, campaignKey, FRONTIER_LAYOUT, f.seen === 'bloom' ? { kind: 'bloom', rate: f.seenRate } : { kind: 'exact' });
      // Its seed list (past the first call) lands in shared seed segments (src/redis/seed-segments.ts).
      await markSeedSegments(rt.deps.redis, campaignKey);
    }
    // A retried attempt must not count its rejected seeds twice.
    const first = (await rt.deps.redis.hsetnx(campaignKeys(campaignKey).control, 'version', String(configVersion))) === 1;
    if (first) for (const r of rejected) await hosts.addProblem(`seed ${r.seed}: ${r.reason}`);
    const { wake } = await enqueueSeeds(rt.deps.redis, campaignKey, byHost, settings, spillOf(rt, settings));
    await hosts.markReady(wake);
    return { hosts: byHost.size, rejectedSeeds: rejected.slice(0, REJECTED_SHOWN), configVersion };
  };
}
