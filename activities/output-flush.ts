// Before a campaign whose output is in object storage is sealed (at its end,
// or by `crawler seal`): every live worker that spooled files for its output
// location uploads what it still holds (src/redis/output-flush.ts), so the
// seal finds every committed page's line and record in the bucket.
import type { CampaignSettings } from '../src/config/campaign';
import { flushOutput, NO_LIVENESS_SPOOLER, type FlushOutcome } from '../src/redis/output-flush';
import type { RedisLike } from '../src/redis/scripts';
import { WorkerRegistry } from '../src/redis/worker-registry';
import { parseOutputLocation } from '../src/storage/output-location';

/**
 * How long a seal waits for the spoolers: a worker answers within a second, then uploads what it
 * holds (at most output.upload.maxFileBytes a file, a few at a time). Past it the seal goes on and
 * reports the pages whose lines are not there yet.
 */
export const FLUSH_WAIT_MS = 120_000;

/** Asks the spoolers of the campaign's output to upload everything and waits for them; null for an output folder. */
export async function flushCampaignOutput(redis: RedisLike, settings: Pick<CampaignSettings, 'output'>, waitMs = FLUSH_WAIT_MS): Promise<FlushOutcome | null> {
  if (parseOutputLocation(settings.output.dir).kind !== 's3') return null;
  const registry = new WorkerRegistry(redis);
  return flushOutput(redis, settings.output.dir, {
    deadline: Date.now() + waitMs,
    isLive: async (ids) => {
      const leased = await registry.live(ids);
      return ids.map((id, i) => id.startsWith(NO_LIVENESS_SPOOLER) || leased[i]);
    },
  });
}
