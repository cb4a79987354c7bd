// The crawler as a library: what a Node application that already talks to
// Temporal needs to start, steer and await campaigns in code, over a
// `@temporalio/client` Client it owns (this module opens no connection and
// reads no environment), plus the types a handler module is written
// against. Workers are run by the `crawler worker` command (or the compose
// file); the application only needs them to poll the same task queue.
import type { Client, WorkflowHandle } from '@temporalio/client';
import { resolveCampaignSettings, type CampaignInput } from './config/campaign';
import type {
  AddSeedsRequest,
  AddSeedsResult,
  HostPauseResult,
  SetBudgetsRequest,
  SetBudgetsResult,
  SetConcurrencyRequest,
  SetConcurrencyResult,
  SetPolitenessRequest,
  SetPolitenessResult,
  SetRenderRequest,
  SetRenderResult,
} from './config/steering';
import { newCampaignId, startCampaign as startCampaignWorkflow } from './temporal/campaign-client';
import {
  addSeedsUpdate,
  campaignStatusQuery,
  cancelSignal,
  pauseCampaignUpdate,
  pauseHostUpdate,
  resumeCampaignUpdate,
  resumeHostUpdate,
  setBudgetsUpdate,
  setConcurrencyUpdate,
  setPolitenessUpdate,
  setRenderUpdate,
  type CampaignResult,
  type CampaignStatus,
} from '../workflows/messages';

export type { CampaignInput, CampaignSettings } from './config/campaign';
export { CampaignInputError, resolveCampaignSettings } from './config/campaign';
export type {
  AddSeedsRequest,
  AddSeedsResult,
  HostPauseResult,
  HostRequest,
  SetBudgetsRequest,
  SetBudgetsResult,
  SetConcurrencyRequest,
  SetConcurrencyResult,
  SetPolitenessRequest,
  SetPolitenessResult,
  SetRenderRequest,
  SetRenderResult,
} from './config/steering';
export type { CampaignResult, CampaignRunStatus, CampaignStatus, CampaignTotals, DomainStatus, HostStatus } from '../workflows/messages';
export type { DatasetItem, Handler, HandlerLink, HandlerLog, PageContext, PageHook, PageResult } from './handlers/api';
export { defineHandler } from './handlers/api';
export { CrawlerError } from './errors';

/** The task queue the crawler's workers poll unless told otherwise (CRAWLER_TASK_QUEUE). */
export const DEFAULT_TASK_QUEUE = 'crawler';

/** A campaign, steered and awaited through the caller's client. */
export interface CampaignHandle {
  readonly campaignId: string;
  /** Totals as of the campaign's last look at Redis, its settings in force, its state. */
  status(): Promise<CampaignStatus>;
  /** Waits for the end: completed, budget-exhausted or cancelled, with totals and problems. */
  result(): Promise<CampaignResult>;
  pause(): Promise<{ paused: boolean }>;
  resume(): Promise<{ paused: boolean }>;
  /** Stops it: sessions end within about 2 s, the summary follows. */
  cancel(reason?: string): Promise<void>;
  setPoliteness(request: SetPolitenessRequest): Promise<SetPolitenessResult>;
  /** One host's render mode (off, browser, auto; null: the campaign's own), from its next session. */
  setRender(request: SetRenderRequest): Promise<SetRenderResult>;
  setBudgets(request: SetBudgetsRequest): Promise<SetBudgetsResult>;
  setConcurrency(request: SetConcurrencyRequest): Promise<SetConcurrencyResult>;
  addSeeds(request: AddSeedsRequest): Promise<AddSeedsResult>;
  pauseHost(host: string): Promise<HostPauseResult>;
  resumeHost(host: string): Promise<HostPauseResult>;
  /** The underlying workflow handle, for anything else Temporal offers. */
  readonly workflow: WorkflowHandle;
}

/** The handle of a campaign that runs or ran (by its ID: the campaign workflow's ID). */
export function campaignHandle(client: Client, campaignId: string): CampaignHandle {
  const workflow = client.workflow.getHandle(campaignId);
  return {
    campaignId,
    workflow,
    status: () => workflow.query(campaignStatusQuery),
    result: () => workflow.result() as Promise<CampaignResult>,
    pause: () => workflow.executeUpdate(pauseCampaignUpdate),
    resume: () => workflow.executeUpdate(resumeCampaignUpdate),
    cancel: (reason) => workflow.signal(cancelSignal, reason ? { reason } : {}),
    setPoliteness: (r) => workflow.executeUpdate(setPolitenessUpdate, { args: [r] }),
    setRender: (r) => workflow.executeUpdate(setRenderUpdate, { args: [r] }),
    setBudgets: (r) => workflow.executeUpdate(setBudgetsUpdate, { args: [r] }),
    setConcurrency: (r) => workflow.executeUpdate(setConcurrencyUpdate, { args: [r] }),
    addSeeds: (r) => workflow.executeUpdate(addSeedsUpdate, { args: [r] }),
    pauseHost: (host) => workflow.executeUpdate(pauseHostUpdate, { args: [{ host }] }),
    resumeHost: (host) => workflow.executeUpdate(resumeHostUpdate, { args: [{ host }] }),
  };
}

/**
 * Starts a campaign. The input is the same plain JSON `temporal workflow
 * start` takes; it is checked here first (a CampaignInputError lists every
 * problem), so a bad campaign never reaches Temporal. Relative paths in it
 * (output folder, seed list, handler) are the workers' to resolve: give
 * absolute ones.
 */
export async function startCampaign(client: Client, input: CampaignInput, opts: { taskQueue?: string } = {}): Promise<CampaignHandle> {
  const campaignId = input.campaignId ?? newCampaignId();
  resolveCampaignSettings(input, campaignId);
  await startCampaignWorkflow(client, opts.taskQueue ?? DEFAULT_TASK_QUEUE, { ...input, campaignId });
  return campaignHandle(client, campaignId);
}
