// The worker registers what createActivities returns; workflows only see
// the CrawlerActivities type.
import { dispatchHostsActivity, finishCampaignActivity, releaseHostActivity, summarizeCampaignActivity } from './campaign-hosts';
import { crawlSessionActivity } from './crawl-session-activity';
import { prepareCampaignActivity } from './prepare-campaign';
import { requeueLostPagesActivity } from './requeue-lost';
import type { WorkerRuntime } from './runtime';
import { addCampaignSeedsActivity, steerCampaignActivity } from './steer-campaign';
import { loadSeedsActivity } from './seeds';
import type { CrawlerActivities } from './types';

export function createActivities(rt: WorkerRuntime): CrawlerActivities {
  return {
    prepareCampaign: prepareCampaignActivity(rt),
    loadSeeds: loadSeedsActivity(rt),
    crawlSession: crawlSessionActivity(rt),
    dispatchHosts: dispatchHostsActivity(rt),
    finishCampaign: finishCampaignActivity(rt),
    summarizeCampaign: summarizeCampaignActivity(rt),
    releaseHost: releaseHostActivity(rt),
    requeueLostPages: requeueLostPagesActivity(rt),
    steerCampaign: steerCampaignActivity(rt),
    addCampaignSeeds: addCampaignSeedsActivity(rt),
  };
}

export { WorkerRuntime } from './runtime';
export type { CrawlerActivities } from './types';
