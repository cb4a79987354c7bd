import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { CampaignInput } from '../config/campaign';
import type { crawlCampaign } from '../../workflows/crawl-campaign';
import { campaignStaticDetails, campaignStaticSummary } from '../../workflows/status-card';
import { CrawlCampaign, CrawlState, queryLiteral } from './search-attributes';
import { CAMPAIGN_WORKFLOW } from './workflow-types';

export function newCampaignId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `crawl-${stamp}-${Math.random().toString(36).slice(2, 6)}`;
}

export async function startCampaign(
  client: Client,
  taskQueue: string,
  input: CampaignInput & { campaignId: string },
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof crawlCampaign>> {
  return client.workflow.start<typeof crawlCampaign>(CAMPAIGN_WORKFLOW, {
    taskQueue,
    workflowId: input.campaignId,
    args: [input],
    typedSearchAttributes: [
      { key: CrawlCampaign, value: input.campaignId },
      { key: CrawlState, value: 'starting' },
    ],
    memo: { seeds: (input.seeds ?? []).slice(0, 20), ...(input.seedsFile ? { seedsFile: input.seedsFile } : {}) },
    // Shown at the top of the workflow's page in the Web UI.
    staticSummary: campaignStaticSummary(input),
    staticDetails: campaignStaticDetails(input),
  });
}

/** A campaign's fairness key: its ID (at most 64 bytes, Temporal's limit; campaign IDs are at most 80 ASCII characters). */
export function fairnessKeyOf(campaignId: string): string {
  return campaignId.slice(0, 64);
}

/** Campaigns still running on a task queue (other than `except`): who else the workers serve. */
export async function runningCampaigns(client: Client, taskQueue: string, except?: string, limit = 20): Promise<string[]> {
  const ids: string[] = [];
  for await (const wf of client.workflow.list({
    query: `WorkflowType = ${queryLiteral(CAMPAIGN_WORKFLOW)} AND ExecutionStatus = 'Running' AND TaskQueue = ${queryLiteral(taskQueue)}`,
  })) {
    if (wf.workflowId !== except) ids.push(wf.workflowId);
    if (ids.length >= limit) break;
  }
  return ids;
}
