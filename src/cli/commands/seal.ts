import type { Command } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/client';
import { clientEndpoints } from '../../stack/stack';
import { createRedis } from '../../redis/client';
import { CampaignConfigMissingError } from '../../redis/campaign-store';
import { reconcileHostRecords } from '../../../activities/campaign-hosts';
import { sealCampaign } from '../../../activities/seal-campaign';
import { outputCacheRoot } from '../../stack/paths';
import { UsageError } from '../usage-error';
import { addS3Options, checkS3Flags, isLocationUrl, s3SettingsOf, type S3Flags } from '../bucket-output';
import { connectCli } from './campaign-control';

// A campaign seals its index itself when it completes. This seals one that
// never got there (terminated, failed, timed out) or seals again (after
// fixing what made the campaign's own seal fail). It needs the campaign's
// Redis (REDIS_URL) and its output folder, no worker. An output in a bucket
// is sealed through this machine's cache of it, and the seal published there
// (activities/seal-campaign.ts).

/** Redis keys are namespaced by the campaign's first run (workflows/crawl-campaign.ts). */
export function campaignKeyOf(campaignId: string, firstRunId: string): string {
  return `${campaignId}.${firstRunId.slice(0, 8)}`;
}

export function registerSealCommand(program: Command): void {
  const cmd = program
    .command('seal <campaign>')
    .description("write a campaign's final index (one line per URL, the committed one) to <output>/sealed/; for a campaign that ended without sealing, or to seal again")
    .option('--out <dir>', "the campaign's output folder as this machine sees it, or s3://bucket/prefix (default: the campaign's own)")
    .option('--json', 'print the result as JSON');
  addS3Options(cmd).action(async (campaignId: string, o: { out?: string; json?: boolean } & S3Flags) => {
    // Without --out the campaign's own output is sealed, which may be a bucket: the flags then override its output.s3.
    if (o.out !== undefined && !isLocationUrl(o.out)) checkS3Flags(o, o.out);
    const s3 = s3SettingsOf(o);
    const client = await connectCli();
    let campaignKey: string;
    let status: string;
    try {
      const d = await client.workflow.getHandle(campaignId).describe();
      status = d.status.name;
      campaignKey = campaignKeyOf(campaignId, d.raw.workflowExecutionInfo?.firstRunId || d.runId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new UsageError(`no campaign ${campaignId}`);
      throw err;
    } finally {
      await client.connection.close();
    }
    // A running campaign's pages are still being committed: its seal would be out of date at once.
    if (status === 'RUNNING') throw new UsageError(`campaign ${campaignId} is still running: it seals its index when it completes (cancel it first to seal it now)`);
    const redis = createRedis(clientEndpoints().redisUrl);
    try {
      await reconcileHostRecords(redis, campaignKey);
      const r = await sealCampaign(redis, campaignKey, {
        outputDir: o.out,
        ...(s3 ? { s3 } : {}),
        cacheRoot: outputCacheRoot(),
        info: { by: 'crawler seal', workflowStatus: status },
      });
      if (o.json) process.stdout.write(`${JSON.stringify(r)}\n`);
      else
        process.stdout.write(
          `sealed ${campaignId}: ${r.lines} URLs in ${r.file}\n` +
            `  raw lines ${r.rawLines}, left out ${r.dropped} (attempts whose commit did not count)${r.unreadable ? `, unreadable ${r.unreadable}` : ''}` +
            `${r.missing ? `, committed URLs without a line ${r.missing}` : ''}\n` +
            `  revisit records ${r.revisits.records}, payload bytes not stored again ${r.revisits.bytesSaved}\n` +
            (r.rendered.pages ? `  rendered ${r.rendered.pages} of ${r.rendered.htmlPages} HTML pages\n` : '') +
            (r.cdxj ? `  CDXJ ${r.cdxj.lines - r.cdxj.keptLines} lines in ${r.cdxj.file}${r.cdxj.keptLines ? ` (beside ${r.cdxj.keptLines} of other campaigns)` : ''}\n` : '') +
            r.datasets.map((d) => `  dataset ${d.name}: ${d.items} items in ${d.file} (left out ${d.dropped})\n`).join('') +
            (r.flush && !r.flush.complete
              ? `  warning: ${r.flush.waitingOn.length} worker(s) spooling for the bucket had not uploaded their last files (${r.flush.waitingOn.join(', ')}): their pages may be missing; seal again once they have\n`
              : ''),
        );
    } catch (err) {
      if (err instanceof CampaignConfigMissingError)
        throw new UsageError(`campaign ${campaignId} has no settings in this Redis (${err.campaignKey}): set REDIS_URL to the campaign's Redis`);
      throw err;
    } finally {
      redis.disconnect();
    }
  });
}
