// A worker whose disk is lost takes with it the lines (and WARC records) it
// committed but had not uploaded. For an output in a bucket each commit keeps
// what undoes it (crawlCommit's `unsealed` record) until a seal finds its
// line in the bucket, with its record (activities/seal-campaign.ts). What a
// seal leaves there was committed without a line that reached the bucket:
// here those commits are undone and their URLs put back in their frontiers,
// so the campaign fetches them again and seals once more.
import { Context } from '@temporalio/activity';
import { CampaignHosts } from '../src/redis/campaign-hosts';
import { loadCampaignSettings } from '../src/redis/campaign-store';
import { Frontier } from '../src/redis/frontier';
import type { RedisLike } from '../src/redis/scripts';
import { parseOutputLocation } from '../src/storage/output-location';
import type { WorkerRuntime } from './runtime';
import { SEAL_IN_SUMMARY_MAX_BYTES } from './campaign-hosts';
import { outputSizes } from './output-read';
import { sealCampaign } from './seal-campaign';

/**
 * Undoes the commits a seal found no line for, on every host of the campaign, and marks those
 * hosts ready. Run only after a seal and while no session runs (the campaign's end): a commit
 * made between the seal and this would be taken for a lost one. Idempotent: a retry finds those
 * commits undone and marks the same hosts ready again. Returns how many URLs go round again.
 */
export async function requeueLost(redis: RedisLike, campaignKey: string, onPage: () => void = () => undefined): Promise<{ requeued: number; hosts: number }> {
  const hosts = new CampaignHosts(redis, campaignKey);
  let requeued = 0;
  const ready: string[] = [];
  for await (const page of hosts.records()) {
    for (const { host } of page) {
      const f = new Frontier(redis, campaignKey, host);
      let queued = 0;
      let pending = false;
      for await (const fps of f.unsealed()) {
        pending = true;
        const r = await f.uncommit(fps);
        requeued += r.undone;
        queued = r.queued;
      }
      // Undone now or by an earlier try that died before marking it: the host has URLs to crawl again.
      if (pending && queued > 0) ready.push(host);
    }
    onPage();
  }
  for (let i = 0; i < ready.length; i += 500) await hosts.markReady(ready.slice(i, i + 500));
  return { requeued, hosts: ready.length };
}

export function requeueLostPagesActivity(rt: WorkerRuntime) {
  return async function requeueLostPages(input: { campaignKey: string }): Promise<{ requeued: number; hosts: number }> {
    const redis = rt.deps.redis;
    const { settings } = await loadCampaignSettings(redis, input.campaignKey);
    if (parseOutputLocation(settings.output.dir).kind !== 's3' || settings.revisit?.enabled) return { requeued: 0, hosts: 0 };
    const heartbeat = () => {
      const ctx = Context.current();
      if (!ctx.info.isLocal) ctx.heartbeat();
    };
    // As the summary: a raw index too large to seal within a local activity is left to `crawler seal`.
    if ((await outputSizes(settings)).rawIndexBytes > SEAL_IN_SUMMARY_MAX_BYTES) {
      rt.log.warn('the raw index is too large for the lost-page check: pages lost with a disk count as missing', { campaignKey: input.campaignKey });
      return { requeued: 0, hosts: 0 };
    }
    // The index only, not published (the summary's seal, later, is the campaign's): what the
    // bucket holds now, after every live spooler uploaded what it held (the seal's flush).
    const sealed = await sealCampaign(redis, input.campaignKey, {
      info: { by: 'lost-page check' },
      cdxj: false,
      publish: false,
      cacheRoot: rt.deps.outputCacheRoot,
      onProgress: heartbeat,
    });
    const r = await requeueLost(redis, input.campaignKey, heartbeat);
    if (r.requeued > 0) {
      rt.log.warn('committed pages without their line or record in the bucket are fetched again', {
        campaignKey: input.campaignKey,
        requeued: r.requeued,
        hosts: r.hosts,
        flushComplete: sealed.flush?.complete ?? null,
      });
    }
    return r;
  };
}
