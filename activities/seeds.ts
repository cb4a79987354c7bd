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
import type { SpillOptions } from '../src/redis/frontier-spill';
import { spillOf } from './frontier-of';
import type { RedisLike } from '../src/redis/scripts';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { campaignKeys } from '../src/redis/keys';
import { readSeedBatches, SeedSourceError, type SeedPosition } from '../src/seeds/seed-source';
import { seenMode } from '../src/redis/frontier-layout';
import { landSeedChunk, SEED_SEGMENT_CHUNK, seedSegmentsOn, type HostSeeds } from '../src/redis/seed-segments';
import { scopeRootOf } from '../src/url/scope';
import type { UrlRules } from '../src/url/url-rules';
import type { WorkerRuntime } from './runtime';
import type { LoadSeedsInput, LoadSeedsResult } from './types';

export interface GroupedSeeds {
  /** Normalised seed URLs by politeness key (host). */
  byHost: Map<string, { seed: string; url: string }[]>;
  rejected: { seed: string; reason: string }[];
}

/**
 * Normalises seeds (bad URLs and unsupported schemes are rejected with the
 * reason) and groups them by host. `rules`: the campaign's URL rules, whose
 * excludes hold seeds too (its includes do not: a seed is an entry point).
 */
export function groupSeeds(seeds: string[], allows: (url: string) => boolean = () => true, rules?: UrlRules): GroupedSeeds {
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
    if (rules?.verdict(url, 'seed')) {
      rejected.push({ seed, reason: `matches a scope.exclude pattern: ${url}` });
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
  spill: SpillOptions | null = null,
): Promise<{ added: Map<string, number>; wake: string[] }> {
  const s = settings ?? (byHost.size > 0 ? (await loadCampaignSettings(redis, campaignKey)).settings : {});
  const added = new Map<string, number>();
  const wake: string[] = [];
  for (const [host, items] of byHost) {
    // Seeds past the host's spill bound land in segments as links do (src/redis/frontier-spill.ts).
    const r = await new Frontier(redis, campaignKey, host, spill).enqueue(
      items.map(({ url }) => ({ url, fp: urlFingerprint(url), depth: 0, referrer: null, priority: frontierPriority(url, s) })),
    );
    added.set(host, r.added);
    // Not "every host that got seeds": a call run again (a retried local
    // activity) must not mark ready a host that was dispatched and has
    // finished meanwhile, and one whose URLs wait unconsumed must be marked
    // even if the first call enqueued them.
    if (Frontier.needsWake(r)) wake.push(host);
  }
  return { added, wake };
}

/** Seeds per batch read from a seed list, and batches per loadSeeds call (each call's work and answer stay bounded). */
export const SEED_BATCH = 1_000;
export const SEED_BATCHES_PER_CALL = 20;
/** Rejected seeds kept among the campaign's problems (all are counted). */
const REJECTED_KEPT_PER_CALL = 20;

/**
 * Reads the next batches of a campaign's seed list straight into the
 * frontiers: normalised, grouped by host, enqueued at depth 0, the hosts
 * marked ready and (same-host / same-domain) their scope roots kept in
 * Redis. Resumes from `from`, or from its own last heartbeat after a retry;
 * the seen-sets make a batch read twice harmless. Past the list's first call,
 * a campaign marked for it (src/redis/seed-segments.ts) that may spill reads
 * one large chunk instead and lands it in a shared seed segment.
 */
export function loadSeedsActivity(rt: WorkerRuntime) {
  return async function loadSeeds(input: LoadSeedsInput): Promise<LoadSeedsResult> {
    const ctx = Context.current();
    const redis = rt.deps.redis;
    const campaign = await rt.campaign(input.campaignKey, 1);
    const s = campaign.settings;
    if (!s.seedsFile) return { next: input.from, done: true, hosts: 0, seeds: 0, rejected: 0 };
    const hosts = new CampaignHosts(redis, input.campaignKey);
    const from = (ctx.info.heartbeatDetails as SeedPosition | undefined) ?? input.from;
    const spill = spillOf(rt, s);
    // The list's first call goes straight into the sorted sets, so its hosts start at once.
    const atStart = from.line === 0 && from.byte === 0 && from.seeds === 0;
    try {
      if (!atStart && spill.above !== null && (await seedSegmentsOn(redis, input.campaignKey))) return await loadSeedChunk(rt, input, campaign, from, spill, hosts);
      let result: LoadSeedsResult = { next: from, done: false, hosts: 0, seeds: 0, rejected: 0 };
      let calls = 0;
      // One call reads a bounded part of the list: its answer is a few history events, whatever the list's size.
      const batchSize = Math.max(1, Math.min(SEED_BATCH, input.maxSeeds ?? SEED_BATCH));
      const batches = input.maxSeeds ? Math.max(1, Math.ceil(input.maxSeeds / batchSize)) : SEED_BATCHES_PER_CALL;
      for await (const b of readSeedBatches(s.seedsFile, { batchSize, from, signal: ctx.cancellationSignal })) {
        const { byHost, rejected } = await admitSeeds(redis, input.campaignKey, campaign, b.seeds);
        const { added, wake } = await enqueueSeeds(redis, input.campaignKey, byHost, s, spill);
        await hosts.markReady(wake);
        for (const r of rejected.slice(0, REJECTED_KEPT_PER_CALL)) await hosts.addProblem(`seed ${r.seed.slice(0, 300)}: ${r.reason}`);
        result = { next: b.next, done: b.done, hosts: result.hosts + added.size, seeds: result.seeds + b.seeds.length, rejected: result.rejected + rejected.length };
        ctx.heartbeat(b.next);
        if (b.done || ++calls >= batches) break;
      }
      return result;
    } catch (err) {
      if (err instanceof SeedSourceError) throw ApplicationFailure.create({ type: err.code, message: err.message, nonRetryable: !err.retryable });
      throw err;
    }
  };
}

type CampaignAtHand = Awaited<ReturnType<WorkerRuntime['campaign']>>;

/**
 * Seeds of the list, normalised and grouped by host, those out of scope or excluded rejected;
 * the scope roots of the rest kept (the list's seeds define the scope of same-host and
 * same-domain campaigns). One scope check for all of them.
 */
async function admitSeeds(redis: RedisLike, campaignKey: string, campaign: CampaignAtHand, seeds: string[]): Promise<GroupedSeeds> {
  const s = campaign.settings;
  const { byHost, rejected } = groupSeeds(seeds, undefined, campaign.urlRules);
  const roots = [
    ...new Set(
      [...byHost.values()]
        .flat()
        .map((it) => scopeRootOf(s.scope, it.url))
        .filter((r): r is string => r !== null),
    ),
  ];
  const rootsKey = campaignKeys(campaignKey).scopeRoots;
  for (let i = 0; i < roots.length; i += SEED_BATCH) await redis.sadd(rootsKey, ...roots.slice(i, i + SEED_BATCH));
  const all = [...byHost.values()].flat();
  const allowed = await campaign.inScope(all.map((it) => it.url));
  const verdict = new Map(all.map((it, i) => [it, allowed[i]]));
  for (const [host, items] of byHost) {
    const kept = items.filter((it) => verdict.get(it) || !rejected.push({ seed: it.seed, reason: `out of the campaign's scope: ${it.url}` }));
    if (kept.length) byHost.set(host, kept);
    else byHost.delete(host);
  }
  return { byHost, rejected };
}

/**
 * One chunk of the list (input.maxSeeds, else SEED_SEGMENT_CHUNK seeds) into one shared seed
 * segment (src/redis/seed-segments.ts). The heartbeat stays at the chunk's start until every
 * block is registered: a retry reads the whole chunk again, and its script skips what the first
 * attempt registered.
 */
async function loadSeedChunk(
  rt: WorkerRuntime,
  input: LoadSeedsInput,
  campaign: CampaignAtHand,
  from: SeedPosition,
  spill: SpillOptions,
  hosts: CampaignHosts,
): Promise<LoadSeedsResult> {
  const ctx = Context.current();
  const redis = rt.deps.redis;
  const s = campaign.settings;
  const chunk = Math.max(1, input.maxSeeds ?? SEED_SEGMENT_CHUNK);
  const seeds: string[] = [];
  let next = from;
  let done = false;
  for await (const b of readSeedBatches(s.seedsFile!, { batchSize: Math.min(SEED_BATCH, chunk), from, signal: ctx.cancellationSignal })) {
    for (const seed of b.seeds) seeds.push(seed);
    next = b.next;
    done = b.done;
    ctx.heartbeat(from);
    if (b.done || seeds.length >= chunk) break;
  }
  // A batch at a time (each awaits Redis, so this worker's workflow tasks and queries are not held
  // up behind a quarter of a million URLs normalised in one go), merged by host in list order.
  const perHost = new Map<string, HostSeeds['seeds']>();
  const rejected: GroupedSeeds['rejected'] = [];
  for (let i = 0; i < seeds.length; i += SEED_BATCH) {
    const admitted = await admitSeeds(redis, input.campaignKey, campaign, seeds.slice(i, i + SEED_BATCH));
    rejected.push(...admitted.rejected);
    for (const [host, items] of admitted.byHost) {
      const list = perHost.get(host) ?? [];
      for (const { url } of items) list.push({ url, fp: urlFingerprint(url), priority: frontierPriority(url, s) });
      perHost.set(host, list);
    }
    ctx.heartbeat(from);
  }
  const mode = await seenMode(redis, input.campaignKey);
  const { added, wake } = await landSeedChunk(
    redis,
    spill.store,
    input.campaignKey,
    mode,
    [...perHost].map(([host, list]) => ({ host, seeds: list })),
    () => ctx.heartbeat(from),
  );
  for (let i = 0; i < wake.length; i += SEED_BATCH) await hosts.markReady(wake.slice(i, i + SEED_BATCH));
  for (const r of rejected.slice(0, REJECTED_KEPT_PER_CALL)) await hosts.addProblem(`seed ${r.seed.slice(0, 300)}: ${r.reason}`);
  ctx.heartbeat(next);
  return { next, done, hosts: added.size, seeds: seeds.length, rejected: rejected.length };
}
