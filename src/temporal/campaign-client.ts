import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { CampaignInput } from '../config/campaign';
import type { crawlCampaign } from '../../workflows/crawl-campaign';
import { CrawlCampaign, CrawlState } from './search-attributes';

export function newCampaignId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `crawl-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

export async function startCampaign(client: Client, taskQueue: string, input: CampaignInput & { campaignId: string }): Promise<WorkflowHandleWithFirstExecutionRunId<typeof crawlCampaign>> {
  return client.workflow.start<typeof crawlCampaign>('crawlCampaign', {
    taskQueue,
    workflowId: input.campaignId,
    args: [input],
    typedSearchAttributes: [
      { key: CrawlCampaign, value: input.campaignId },
      { key: CrawlState, value: 'starting' },
    ],
    memo: { seeds: (input.seeds ?? []).slice(0, 20), ...(input.seedsFile ? { seedsFile: input.seedsFile } : {}) },
  });
}
