import type { Command } from 'commander';
import { WorkflowNotFoundError } from '@temporalio/client';
import { CrawlerError } from '../../errors';
import { clientEndpoints } from '../../stack/stack';
import { createRedis } from '../../redis/client';
import { purgeCampaign } from '../../redis/retention';
import { removeSegmentsOf } from '../../storage/frontier-segment-store';
import { UsageError } from '../usage-error';
import { connectCli } from './campaign-control';

/** `crawler purge` of a campaign whose workflow still runs: its sessions would write keys again. */
export class CampaignRunningError extends CrawlerError<'CAMPAIGN_RUNNING'> {
  readonly exitCode = 3;
  constructor(readonly campaignId: string) {
    super(
      'CAMPAIGN_RUNNING',
      `campaign ${campaignId} is still running: purging it now would pull the state from under its host sessions, which would write keys again. ` +
        `Cancel it first (crawler cancel ${campaignId}), or add --force`,
    );
    this.name = 'CampaignRunningError';
  }
}

/** Redis keys are namespaced by the campaign ID and its first run (workflows/crawl-campaign.ts). */
export const campaignKeyOf = (campaignId: string, firstRunId: string) => `${campaignId}.${firstRunId.slice(0, 8)}`;

/** The campaign's Redis namespace, from Temporal; refuses a running campaign unless forced. */
async function campaignKeyFromTemporal(campaignId: string, force: boolean): Promise<string> {
  const client = await connectCli();
  try {
    const d = await client.workflow.getHandle(campaignId).describe();
    if (d.status.name === 'RUNNING' && !force) throw new CampaignRunningError(campaignId);
    // The first run of the chain (continue-as-new keeps the campaign's keys); a server too old to say cannot be guessed from the latest run.
    const firstRunId = d.raw.workflowExecutionInfo?.firstRunId;
    if (!firstRunId)
      throw new UsageError(`Temporal did not name the first run of ${campaignId}: give its Redis namespace with --key (the campaignKey of \`crawler status --json\`)`);
    return campaignKeyOf(campaignId, firstRunId);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      throw new UsageError(
        `no campaign ${campaignId} in Temporal (its history may be past the namespace's retention): give its Redis namespace with --key (the campaignKey of \`crawler status --json\`, "<campaign>.<first 8 characters of its first run ID>")`,
      );
    }
    throw err;
  } finally {
    await client.connection.close();
  }
}

export function registerPurgeCommand(program: Command): void {
  program
    .command('purge <campaign>')
    .description(
      "delete every Redis key of a campaign that has ended (its WARC and index files stay); finished campaigns' keys otherwise expire after their retention (--retention of crawl, default 7 days)",
    )
    .option('--force', 'purge even if the campaign is still running (it then loses its state)')
    .option('--key <campaignKey>', "the campaign's Redis namespace, for a campaign Temporal no longer knows (skips the running check)")
    .action(async (campaignId: string, opts: { force?: boolean; key?: string }) => {
      if (opts.key !== undefined && !opts.key.startsWith(`${campaignId}.`)) {
        throw new UsageError(`--key ${JSON.stringify(opts.key)} is not a namespace of campaign ${campaignId} (it starts with "${campaignId}.")`);
      }
      const campaignKey = opts.key ?? (await campaignKeyFromTemporal(campaignId, opts.force ?? false));
      const redis = createRedis(clientEndpoints().redisUrl);
      try {
        // The frontier segments first: the settings that name their store go with the keys.
        const segments = await removeSegmentsOf(redis, campaignKey);
        const r = await purgeCampaign(redis, campaignKey);
        process.stdout.write(
          `purged ${campaignId} (${campaignKey}): ${r.keys} key(s) of ${r.hosts} host(s) deleted` +
            (segments === null
              ? ' (its settings were gone: frontier segments, if any, are left under frontier/ in its output)'
              : `, ${segments} frontier segment object(s) removed`) +
            '\n',
        );
      } finally {
        redis.disconnect();
      }
    });
}
