// The worker registers what createActivities returns; workflows only see
// the CrawlerActivities type.
import { crawlStepActivity } from './crawl-step';
import { findClosedDomainsActivity } from './domain-watch';
import { loadRobotsActivity } from './load-robots';
import { prepareCampaignActivity } from './prepare-campaign';
import type { WorkerRuntime } from './runtime';
import type { CrawlerActivities } from './types';
import { addCampaignSeedsActivity, updateCampaignSettingsActivity } from './update-campaign';

export function createActivities(rt: WorkerRuntime): CrawlerActivities {
  return {
    prepareCampaign: prepareCampaignActivity(rt),
    loadRobots: loadRobotsActivity(rt),
    crawlStep: crawlStepActivity(rt),
    findClosedDomains: findClosedDomainsActivity(rt),
    updateCampaignSettings: updateCampaignSettingsActivity(rt),
    addCampaignSeeds: addCampaignSeedsActivity(rt),
  };
}

export { WorkerRuntime } from './runtime';
export type { CrawlerActivities } from './types';
