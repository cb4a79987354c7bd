// Operator steering, applied where running sessions look: the campaign's
// control hash in Redis (pause, campaign-wide delay, settings version), the
// paused-hosts set, per-host delays and render modes, and the stored
// settings (budgets).
// Sessions read the control between pages, so a change reaches them within
// about a second; a host workflow waiting on a pause is woken by a signal.
import { ApplicationFailure } from '@temporalio/activity';
import { resolveKnownHost, SteeringError, wantedHost } from '../src/config/steering';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { Frontier } from '../src/redis/frontier';
import { loadCampaignSettings, saveCampaignSettings } from '../src/redis/campaign-store';
import { campaignKeys } from '../src/redis/keys';
import type { RedisLike } from '../src/redis/scripts';
import { signalIfRunning } from '../src/temporal/signal';
import { urlFingerprint } from '../src/url/fingerprint';
import { domainWorkflowId } from '../workflows/ids';
import { FailureType, steerSignal } from '../workflows/messages';
import { wakeSleepingHolders } from './nudge';
import type { WorkerRuntime } from './runtime';
import { enqueueSeeds, groupSeeds } from './seeds';
import type { AddCampaignSeedsInput, AddCampaignSeedsResult, SteerCampaignInput, SteerCampaignResult } from './types';
import { spillOf } from './frontier-of';

/** Budget slots added per SADD when pages fetched while unlimited are brought into the budget. */
const FILL_CHUNK = 1_000;

/**
 * Applies one change as settings version `input.version`. Idempotent: a
 * change whose version is already in force (an earlier attempt got through)
 * only re-sends its wake-ups.
 */
export function steerCampaignActivity(rt: WorkerRuntime) {
  return async function steerCampaign(input: SteerCampaignInput): Promise<SteerCampaignResult> {
    const redis = rt.deps.redis;
    const hosts = new CampaignHosts(redis, input.campaignKey);
    const stored = await loadCampaignSettings(redis, input.campaignKey);
    const control = await hosts.control();
    const pick = (b: { maxPages: number | null; maxDepth: number | null }) => ({ maxPages: b.maxPages, maxDepth: b.maxDepth });
    let budgets = pick(stored.settings.budgets);
    let change = input.change;
    if ('host' in change && change.host !== null) change = { ...change, host: await knownHost(redis, input.campaignKey, change.host) };
    // A host moved to rendering on a worker that cannot render would only collect RENDER_FAILED: refused, saying what to install.
    if (change.kind === 'render' && change.render !== null && change.render !== 'off') {
      const problem = rt.deps.chromiumProblem?.() ?? null;
      if (problem) throw ApplicationFailure.nonRetryable(`render ${change.render} for ${change.host} refused: ${problem}`, FailureType.steeringRefused);
    }
    if (control.version < input.version) {
      switch (change.kind) {
        case 'pause':
        case 'resume':
          await hosts.setControl({ paused: change.kind === 'pause' });
          break;
        case 'pause-host':
        case 'resume-host':
          await hosts.setHostPaused(change.host, change.kind === 'pause-host');
          break;
        case 'delay':
          if (change.host === null) await hosts.setControl({ minDelayMs: change.minDelayMs });
          else await hosts.setHostDelay(change.host, change.minDelayMs);
          break;
        case 'render':
          await hosts.setHostRender(change.host, change.render);
          break;
        case 'budgets': {
          const next = { ...stored.settings.budgets, ...change.budgets };
          if (stored.settings.budgets.maxPages === null && next.maxPages !== null) await fillBudget(redis, input.campaignKey, input.version, (await hosts.totals()).fetched);
          await saveCampaignSettings(redis, input.campaignKey, input.version, { ...stored.settings, budgets: next });
          budgets = pick(next);
          break;
        }
      }
      // Last: sessions that see the new version reload the settings above.
      await hosts.setControl({ version: input.version });
    }
    // Host workflows waiting on a pause look again when told.
    if (change.kind === 'resume') {
      for await (const page of hosts.activeHosts()) await Promise.all(page.map(({ host }) => wakeHost(rt, input.campaignId, host, input.version)));
    } else if (change.kind === 'resume-host' && (await hosts.isActive(change.host))) {
      await wakeHost(rt, input.campaignId, change.host, input.version);
    }
    return { configVersion: Math.max(control.version, input.version), budgets, ...('host' in change && change.host !== null ? { host: change.host } : {}) };
  };
}

/**
 * The host as the campaign knows it: the exact key, or the one key that
 * matches whatever its port. A host is known once it has a record (its first
 * session wrote one), or while it holds a slot or waits for one (a host still
 * reading its robots.txt, or held back by maxActiveHosts, can be steered
 * before its first page). Unknown hosts are refused (SteeringError: the
 * update fails with the reason and nothing changes).
 */
async function knownHost(redis: RedisLike, campaignKey: string, host: string): Promise<string> {
  const k = campaignKeys(campaignKey);
  let wanted: string;
  try {
    wanted = wantedHost(host);
  } catch (err) {
    throw ApplicationFailure.nonRetryable((err as Error).message, FailureType.steeringRefused);
  }
  const [recorded, active, ready] = await Promise.all([redis.hexists(k.hosts, wanted), redis.hexists(k.active, wanted), redis.zscore(k.ready, wanted)]);
  if (recorded === 1 || active === 1 || ready !== null) return wanted;
  const pattern = `${wanted.replace(/[*?[\]\\]/g, '\\$&')}:*`;
  const like = new Set<string>();
  for (const scan of [
    (c: string) => redis.hscan(k.hosts, c, 'MATCH', pattern, 'COUNT', 1000),
    (c: string) => redis.hscan(k.active, c, 'MATCH', pattern, 'COUNT', 1000),
    (c: string) => redis.zscan(k.ready, c, 'MATCH', pattern, 'COUNT', 1000),
  ]) {
    let cursor = '0';
    do {
      const [next, flat] = await scan(cursor);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) like.add(flat[i]);
    } while (cursor !== '0' && like.size < 20);
  }
  try {
    return resolveKnownHost(host, like);
  } catch (err) {
    if (err instanceof SteeringError) throw ApplicationFailure.nonRetryable(err.message, FailureType.steeringRefused);
    throw err;
  }
}

async function wakeHost(rt: WorkerRuntime, campaignId: string, host: string, configVersion: number): Promise<void> {
  await signalIfRunning(rt.deps.temporal, domainWorkflowId(campaignId, host), steerSignal, { configVersion });
}

/**
 * While maxPages is unlimited no page takes a budget slot, so a budget set
 * later would count from zero. Give the pages fetched so far slots first,
 * so "stop at N pages" means N in all.
 */
async function fillBudget(redis: RedisLike, campaignKey: string, version: number, fetched: number): Promise<void> {
  const budgetKey = campaignKeys(campaignKey).budget;
  const missing = fetched - (await redis.scard(budgetKey));
  for (let i = 0; i < missing; i += FILL_CHUNK) {
    const members = Array.from({ length: Math.min(FILL_CHUNK, missing - i) }, (_, j) => `fetched-while-unlimited:${version}:${i + j}`);
    await redis.sadd(budgetKey, ...members);
  }
}

/**
 * Seeds added by an operator: normalised, checked against the campaign's
 * scope, enqueued at depth 0 like the campaign's own seeds and their hosts
 * marked ready. Seeds the campaign has already seen are reported as
 * rejected (they would not be fetched again); so is a seed of a retried
 * attempt that got through.
 */
export function addCampaignSeedsActivity(rt: WorkerRuntime) {
  return async function addCampaignSeeds(input: AddCampaignSeedsInput): Promise<AddCampaignSeedsResult> {
    const redis = rt.deps.redis;
    const campaign = await rt.campaign(input.campaignKey, input.configVersion);
    const { byHost, rejected } = groupSeeds(input.seeds, undefined, campaign.urlRules);
    const accepted: string[] = [];
    for (const [host, all] of byHost) {
      const allowed = await campaign.inScope(all.map((it) => it.url));
      const items = all.filter((it, i) => allowed[i] || !rejected.push({ seed: it.seed, reason: `out of the campaign's scope: ${it.url}` }));
      const frontier = new Frontier(redis, input.campaignKey, host);
      const fresh: typeof items = [];
      const urls = new Set<string>();
      for (const it of items) {
        if (urls.has(it.url)) {
          rejected.push({ seed: it.seed, reason: `same URL as another seed of this request: ${it.url}` });
          continue;
        }
        if ((await frontier.hasSeen([urlFingerprint(it.url)]))[0]) {
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
    const { added, wake } = await enqueueSeeds(redis, input.campaignKey, byHost, undefined, spillOf(rt, campaign.settings));
    await new CampaignHosts(redis, input.campaignKey).markReady(wake);
    // A revisit host may hold its slot asleep until its next due URL: the seeds wake it.
    if (campaign.settings.revisit?.enabled) await wakeSleepingHolders(rt, input.campaignKey, campaign.settings.campaignId, wake);
    return { accepted, rejected, hosts: added.size };
  };
}
