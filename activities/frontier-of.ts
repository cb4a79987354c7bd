// A host's frontier as the activities that have its campaign at hand build it: with the campaign's
// spill bound and output store (src/redis/frontier-spill.ts), so whoever enqueues spills a tail
// past the bound and whoever claims reads segments back.
import type { CampaignSettings } from '../src/config/campaign';
import { Frontier } from '../src/redis/frontier';
import type { SpillOptions } from '../src/redis/frontier-spill';
import { spillOptionsOf } from '../src/storage/frontier-segment-store';
import type { WorkerRuntime } from './runtime';

/** The campaign's spill options on this worker (its spool's store handle for an output in a bucket). */
export function spillOf(rt: WorkerRuntime, settings: Pick<CampaignSettings, 'frontier' | 'output'>): SpillOptions {
  return spillOptionsOf(settings, rt.deps.spool ?? null, (err) => rt.log.warn('frontier: cannot spill a tail to the output store; it stays in Redis', { err }));
}

export function frontierOf(rt: WorkerRuntime, campaign: { key: string; settings: Pick<CampaignSettings, 'frontier' | 'output'> }, host: string): Frontier {
  return new Frontier(rt.deps.redis, campaign.key, host, spillOf(rt, campaign.settings));
}
